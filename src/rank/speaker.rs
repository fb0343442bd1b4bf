//! Who said a turn, and whether the question is about them.
//!
//! "What do Melanie's kids like?" is answered by what Melanie said, across sessions; the
//! turns that hold it share one word with the question (`kids`) and are outranked by
//! the other speaker's turns that share more. In a conversation the question names a
//! speaker, the turns that speaker said come first among those that passed the gate: on
//! the LoCoMo dev conversations, 97 % of the evidence of a question that names one
//! speaker is that speaker's (see `docs/relevance.md`).
//!
//! A chunk's speaker is its `metadata.speaker`, else, for a turn of a conversation (a
//! chunk with a `context_id`), the name its content opens with as transcripts write
//! turns (`Caroline: ...`, `User: ...`).

use crate::analysis::text::STOP_WORDS;
use crate::model::doc::{Chunk, Document};

/// The longest name taken from a turn's opening `Name: `, in characters.
const MAX_NAME_CHARS: usize = 40;

/// Words of a name that do not name anyone on their own.
const TITLES: [&str; 7] = ["dr", "mr", "mrs", "ms", "mx", "prof", "sir"];

/// The speaker of `document`: see the [module](self) documentation.
pub(crate) fn speaker_of(document: &Document) -> Option<&str> {
    let Document::Chunk(chunk) = document else {
        return None;
    };
    if let Some(speaker) = chunk.metadata.get("speaker").and_then(|s| s.as_str()) {
        let speaker = speaker.trim();
        return (!speaker.is_empty()).then_some(speaker);
    }
    chunk.context_id.as_ref()?;
    opening_name(chunk)
}

/// The `Name` of a content that opens with `Name: ` (or a full-width colon): one to
/// three words, each opening with a capital letter or a letter of a script without
/// capitals, two characters at least.
fn opening_name(chunk: &Chunk) -> Option<&str> {
    let end = chunk.content.find([':', '：'])?;
    let name = &chunk.content[..end];
    let rest = &chunk.content[end..];
    let spaced = rest.starts_with(": ") || rest.starts_with('：');
    let length = name.chars().count();
    if !spaced || !(2..=MAX_NAME_CHARS).contains(&length) {
        return None;
    }
    let words: Vec<&str> = name.split(' ').collect();
    let named = (1..=3).contains(&words.len())
        && words.iter().all(|word| {
            word.chars()
                .next()
                .is_some_and(|c| c.is_uppercase() || (c.is_alphabetic() && !c.is_lowercase()))
                && word
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '\'' || c == '-' || c == '.')
        });
    named.then_some(name)
}

/// A question, as [`names`] reads it.
#[derive(Debug, Clone)]
pub(crate) struct Question {
    /// Its words, lowercased (letters and digits; anything else separates).
    words: Vec<String>,
    /// Its text, lowercased (names in scripts written without spaces are found in it).
    lower: String,
}

impl Question {
    pub(crate) fn new(text: &str) -> Question {
        Question {
            words: words(text),
            lower: text.to_lowercase(),
        }
    }
}

/// `text`'s words, lowercased (letters and digits; anything else separates).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether `question` names `speaker`: one of the name's words that names someone (not
/// a title or a stop word, two characters at least) is one of its words; a word in a
/// script without capitals (written without spaces) is found anywhere in it.
pub(crate) fn names(question: &Question, speaker: &str) -> bool {
    words(speaker).iter().any(|word| {
        let naming = word.chars().count() >= 2
            && !TITLES.contains(&word.as_str())
            && !STOP_WORDS.contains(&word.as_str());
        let uncased = word
            .chars()
            .any(|c| c.is_alphabetic() && !c.is_lowercase() && !c.is_uppercase());
        naming
            && if uncased {
                question.lower.contains(word.as_str())
            } else {
                question.words.contains(word)
            }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(content: &str) -> Document {
        let mut chunk = Chunk::new("t", content);
        chunk.context_id = Some("conversation".into());
        Document::Chunk(chunk)
    }

    #[test]
    fn a_turn_opens_with_its_speaker() {
        assert_eq!(
            speaker_of(&turn("Caroline: I went hiking.")),
            Some("Caroline")
        );
        assert_eq!(speaker_of(&turn("Mary Ann Lee: yes")), Some("Mary Ann Lee"));
        assert_eq!(speaker_of(&turn("User: what time is it?")), Some("User"));
        assert_eq!(speaker_of(&turn("Dr. Chen: rest a week")), Some("Dr. Chen"));
        assert_eq!(
            speaker_of(&turn("Анастасия Павловна Романова: да")),
            Some("Анастасия Павловна Романова")
        );
        assert_eq!(speaker_of(&turn("王芳：我们明天见")), Some("王芳"));
        // Not a name: lowercase, too many words, one letter, no space after the colon,
        // no colon.
        assert_eq!(speaker_of(&turn("note: buy milk")), None);
        assert_eq!(speaker_of(&turn("The Big Red Dog Barked: no")), None);
        assert_eq!(speaker_of(&turn("A: on Sunday")), None);
        assert_eq!(speaker_of(&turn("Time:10:30 am")), None);
        assert_eq!(speaker_of(&turn("Caroline went hiking.")), None);
    }

    #[test]
    fn metadata_names_the_speaker_and_a_note_outside_a_conversation_has_none() {
        let mut chunk = Chunk::new("n", "Warning: the kettle is hot");
        assert_eq!(speaker_of(&Document::Chunk(chunk.clone())), None);
        chunk
            .metadata
            .insert("speaker".into(), serde_json::json!("Jon"));
        assert_eq!(speaker_of(&Document::Chunk(chunk)), Some("Jon"));
    }

    #[test]
    fn a_question_names_a_speaker_by_a_word_of_the_name_that_names_someone() {
        let question = Question::new("What do Melanie's kids like?");
        assert!(names(&question, "Melanie"));
        assert!(!names(&question, "Caroline"));
        assert!(names(&Question::new("what did mary say"), "Mary Ann Lee"));
        assert!(names(&Question::new("What did Lee say?"), "Mary Ann Lee"));
        assert!(names(&Question::new("What did the user ask?"), "User"));
        // A title or a stop word names no one.
        assert!(!names(
            &Question::new("What did Dr. Patel say?"),
            "Dr. Chen"
        ));
        assert!(names(&Question::new("What did Chen say?"), "Dr. Chen"));
        assert!(!names(&Question::new("What is the plan?"), "The Doctor"));
        assert!(!names(&Question::new("Melanies"), "Melanie"));
        assert!(!names(&question, ""));
        // Names in scripts without spaces are found within the text.
        assert!(names(&Question::new("王芳说了什么？"), "王芳"));
        assert!(!names(&Question::new("李明说了什么？"), "王芳"));
    }
}
