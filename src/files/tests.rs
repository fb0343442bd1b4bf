use proptest::prelude::*;

use super::*;

const GUIDE: &str = "\
---
title: Guide
tags: [ops, install]
---
# Install

Intro line.

## Linux

### From source

Run `make install` as root.

## macOS

Use brew.

# Usage

Start it.
";

#[test]
fn markdown_pieces_carry_their_lines_and_heading_path() {
    // Small pieces: one per block.
    let file = read(GUIDE, Format::Markdown, 8).unwrap();
    assert_eq!(file.metadata["title"], "Guide");
    assert_eq!(file.metadata["tags"], serde_json::json!(["ops", "install"]));
    let find = |needle: &str| {
        file.pieces
            .iter()
            .find(|p| p.text.contains(needle))
            .unwrap_or_else(|| panic!("{needle} in {:#?}", file.pieces))
    };
    let source = find("make install");
    assert_eq!(source.headings, ["Install", "Linux", "From source"]);
    assert_eq!(source.lines, [13, 13]);
    assert_eq!(find("brew").headings, ["Install", "macOS"]);
    assert_eq!(find("Start it").headings, ["Usage"]);
    assert_eq!(find("Intro line").headings, ["Install"]);
    // Every piece's lines hold its text.
    let lines: Vec<&str> = GUIDE.lines().collect();
    for piece in &file.pieces {
        let [first, last] = piece.lines;
        let held = lines[first as usize - 1..last as usize].join("\n");
        assert!(held.contains(&piece.text), "{piece:?} not in {held:?}");
    }
    // One piece for the whole body when it fits; it starts under the first heading.
    let whole = read(GUIDE, Format::Markdown, 4096).unwrap();
    assert_eq!(whole.pieces.len(), 1);
    assert_eq!(whole.pieces[0].lines, [5, 21]);
    assert_eq!(whole.pieces[0].headings, ["Install"]);
}

#[test]
fn bad_front_matter_names_its_line() {
    let unclosed = front_matter("---\ntitle: x\n\n# Body\n").unwrap_err();
    assert_eq!(unclosed.line, Some(1));
    assert!(unclosed.reason.contains("never closed"), "{unclosed}");
    // In a document, a first `---` never closed is a thematic break: no front matter.
    let ruled = read("---\ntitle: x\n\n# Body\n", Format::Markdown, 64).unwrap();
    assert!(ruled.metadata.is_empty());
    assert_eq!(ruled.pieces[0].lines, [1, 4]);
    let bad = read(
        "---\ntitle: ok\ndescription: [unclosed\nother: 1\n---\nBody\n",
        Format::Markdown,
        64,
    )
    .unwrap_err();
    assert!(matches!(bad.line, Some(3..=5)), "{bad}");
    assert!(bad.reason.contains("not valid YAML"), "{bad}");
    let list = front_matter("---\n- a\n- b\n---\nBody\n").unwrap_err();
    assert_eq!(list.line, Some(2));
    // Text between two rules of a document is text.
    let text = read("---\nAn intro.\n---\nBody\n", Format::Markdown, 64).unwrap();
    assert!(text.metadata.is_empty());
    assert!(text.pieces[0].text.contains("An intro."));
    // A thematic break later in the file is not a front matter.
    let plain = read("Text\n---\nMore\n", Format::Markdown, 64).unwrap();
    assert!(plain.metadata.is_empty());
    // An empty front matter is none.
    let empty = read("---\n---\nBody\n", Format::Markdown, 64).unwrap();
    assert!(empty.metadata.is_empty());
    assert_eq!(empty.pieces[0].lines, [3, 3]);
}

#[test]
fn text_and_formats() {
    assert_eq!(Format::of(Path::new("a/B.MD")), Some(Format::Markdown));
    assert_eq!(Format::of(Path::new("notes.txt")), Some(Format::Text));
    assert_eq!(Format::of(Path::new("main.rs")), None);
    assert_eq!(Format::of(Path::new("README")), None);
    let file = read("\u{feff}one\n\ntwo\n", Format::Text, 1).unwrap();
    let lines: Vec<[u32; 2]> = file.pieces.iter().map(|p| p.lines).collect();
    assert_eq!(lines, [[1, 1], [3, 3]]);
    assert!(read(" \n\n", Format::Text, 64).unwrap().pieces.is_empty());
}

/// A Markdown document from generated sections: headings of any level, paragraphs,
/// lists and fenced code.
fn document() -> impl Strategy<Value = String> {
    let word = prop::sample::select(vec![
        "alpha",
        "beta",
        "gamma",
        "delta",
        "install",
        "the",
        "index",
        "ruche",
        "Öl",
        "日本語",
        "x",
        "configuration",
        "naïve",
    ]);
    let sentence = prop::collection::vec(word, 1..14).prop_map(|w| w.join(" ") + ".");
    let block =
        prop_oneof![
            (1usize..=6, prop::collection::vec(sentence.clone(), 1..2))
                .prop_map(|(level, s)| format!("{} {}", "#".repeat(level), s.join(" "))),
            prop::collection::vec(sentence.clone(), 1..6).prop_map(|s| s.join(" ")),
            prop::collection::vec(sentence.clone(), 1..4).prop_map(|s| s
                .iter()
                .map(|l| format!("- {l}"))
                .collect::<Vec<_>>()
                .join("\n")),
            prop::collection::vec(sentence, 1..4)
                .prop_map(|s| format!("```\n{}\n```", s.join("\n"))),
        ];
    prop::collection::vec(block, 0..25).prop_map(|blocks| blocks.join("\n\n") + "\n")
}

fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The pieces cover the document, in order, each within the size, each held by its
    /// lines, with a heading path no deeper than the headings above it.
    #[test]
    fn pieces_cover_the_document_in_order_within_the_size(
        text in document(),
        max_tokens in 8usize..200,
        format in prop::sample::select(vec![Format::Markdown, Format::Text]),
    ) {
        let file = read(&text, format, max_tokens).unwrap();
        let joined: String = file.pieces.iter().map(|p| p.text.as_str()).collect();
        prop_assert_eq!(squeezed(&joined), squeezed(&text));
        let lines: Vec<&str> = text.split('\n').collect();
        let mut last_line = 0;
        for piece in &file.pieces {
            prop_assert!(crate::count_tokens(&piece.text) <= max_tokens, "{:?}", piece);
            let [first, last] = piece.lines;
            prop_assert!(first >= last_line && first <= last, "{:?} after {}", piece, last_line);
            last_line = last;
            let held = lines[first as usize - 1..last as usize].join("\n");
            prop_assert!(held.contains(&piece.text), "{:?} not in {:?}", piece, held);
            prop_assert!(piece.headings.len() <= 6);
            if format == Format::Text {
                prop_assert!(piece.headings.is_empty());
            }
        }
    }
}
