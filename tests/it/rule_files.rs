//! The coding agents' rule files and skills, synced: each format's fields mapped as the
//! format means them (a golden file), and the four ways a rule applies in a search and a
//! turn: always, by description, by file, by name.

use std::path::{Path, PathBuf};

use ruchedb::engine::{FileChange, SyncOptions};
use ruchedb::relevance::GateDecision;
use ruchedb::retrieve::AppliedBy;
use ruchedb::{Apply, Document, Engine, Kind, SearchRequest, TurnRequest};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn synced() -> Engine {
    let engine = Engine::builder().temporary().unwrap();
    let report = engine
        .sync(
            &["."],
            &SyncOptions::default().with_base(fixtures().join("agent-rules")),
        )
        .unwrap();
    assert_eq!(report.failed, 0, "{report:#?}");
    // The slash command under `.claude/commands` is no rule: left alone.
    assert_eq!(report.other_files, 1, "{report:#?}");
    engine
}

/// What the golden file records of a document.
fn summary(doc: &Document) -> serde_json::Value {
    match doc {
        Document::Rule(rule) => serde_json::json!({
            "kind": "rule",
            "id": rule.id,
            "apply": rule.apply.name(),
            "globs": rule.globs,
            "folder": rule.folder,
            "condition": rule.condition,
        }),
        Document::Tool(tool) => serde_json::json!({
            "kind": "tool",
            "id": tool.id,
            "name": tool.name,
            "description": tool.description,
        }),
        other => panic!("not synced from a rule file: {other:?}"),
    }
}

#[test]
fn each_format_s_fields_map_as_the_format_means_them() {
    let engine = synced();
    let mut docs = engine.export(Kind::Rule, None).unwrap();
    docs.extend(engine.export(Kind::Tool, None).unwrap());
    let got: Vec<serde_json::Value> = docs.iter().map(summary).collect();
    let expected: Vec<serde_json::Value> =
        std::fs::read_to_string(fixtures().join("agent-rules.expected.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    assert_eq!(
        got,
        expected,
        "{}",
        serde_json::to_string_pretty(&got).unwrap()
    );
    // The body is what the agent is told; the description is what is matched.
    let python = engine
        .get(Kind::Rule, "default", ".cursor/rules/python-style.mdc")
        .unwrap()
        .unwrap();
    let python = python.as_rule().unwrap();
    assert!(
        python
            .body
            .as_deref()
            .unwrap()
            .starts_with("- Format with black")
    );
    assert_eq!(python.action, "");
    assert_eq!(python.source.as_ref().unwrap().lines, Some([6, 7]));
    // A skill's body is never indexed: only its name and description are.
    let skill = engine
        .search(&SearchRequest::tools(
            "sort each group by the number of reviewers",
        ))
        .unwrap();
    assert!(skill.hits.is_empty(), "{:?}", skill.hits);
}

fn ids(response: &ruchedb::SearchResponse) -> Vec<&str> {
    response.hits.iter().map(|h| h.id.as_str()).collect()
}

/// The always-applied rules, in the order they come (by priority, then id).
const ALWAYS: [&str; 5] = [
    ".claude/rules/commits.md",
    ".continue/rules/general.md",
    ".cursor/rules/security.mdc",
    ".cursorrules",
    ".windsurf/rules/tone.md",
];

#[test]
fn always_rules_come_first_in_every_search_and_the_others_by_file_description_or_name() {
    let engine = synced();
    // An unrelated message: only the always-applied rules, the gate passes nothing.
    let unrelated = engine
        .search(&SearchRequest::rules("what is the capital of Peru"))
        .unwrap();
    assert_eq!(ids(&unrelated), ALWAYS);
    assert!(
        unrelated
            .hits
            .iter()
            .all(|h| h.breakdown.gate == GateDecision::Applied(AppliedBy::Always))
    );

    // By description: the gate decides.
    let incident = engine
        .search(&SearchRequest::rules(
            "the production database is down, we have an outage",
        ))
        .unwrap();
    assert!(
        ids(&incident).contains(&".windsurf/rules/incident.md"),
        "{:?}",
        ids(&incident)
    );
    assert!(!ids(&incident).contains(&".cursor/rules/python-style.mdc"));

    // By file: a glob rule only when a matching file is named.
    let request = SearchRequest::rules("fix the failing build");
    let without = engine.search(&request).unwrap();
    assert!(!ids(&without).contains(&".cursor/rules/python-style.mdc"));
    let with = engine
        .search(&request.clone().with_file("service/handlers/orders.py"))
        .unwrap();
    let python = with
        .hits
        .iter()
        .find(|h| h.id == ".cursor/rules/python-style.mdc")
        .unwrap();
    assert_eq!(
        python.breakdown.gate,
        GateDecision::Applied(AppliedBy::File)
    );
    let tsx = engine
        .search(&request.clone().with_file("web/pages/cart.tsx"))
        .unwrap();
    assert!(ids(&tsx).contains(&".windsurf/rules/frontend.md"));
    assert!(!ids(&tsx).contains(&".cursor/rules/python-style.mdc"));
    // Continue's `alwaysApply: false` with globs: by file, or by description.
    let docs_by_file = engine
        .search(&request.clone().with_file("docs/guide/intro.mdx"))
        .unwrap();
    assert!(ids(&docs_by_file).contains(&".continue/rules/docs.md"));

    // By name: a manual rule only when named, by id or `@name`.
    assert!(!ids(&without).contains(&".cursor/rules/release-checklist.mdc"));
    let named = engine
        .search(&SearchRequest::rules("cut a release").with_rule("release-checklist"))
        .unwrap();
    assert!(ids(&named).contains(&".cursor/rules/release-checklist.mdc"));
    let mentioned = engine
        .search(&SearchRequest::rules("follow @legal for the NOTICE file"))
        .unwrap();
    assert!(
        ids(&mentioned).contains(&".windsurf/rules/legal.md"),
        "{:?}",
        ids(&mentioned)
    );

    // A folder's AGENTS.md: a candidate only when a named file is inside the folder.
    let testing = SearchRequest::rules("how do I run the tests before I push");
    let in_cli = engine
        .search(&testing.clone().with_file("crates/cli/src/main.rs"))
        .unwrap();
    assert!(
        ids(&in_cli).contains(&"crates/cli/AGENTS.md#1"),
        "{:?}",
        ids(&in_cli)
    );
    let elsewhere = engine
        .search(&testing.clone().with_file("crates/core/src/lib.rs"))
        .unwrap();
    assert!(
        !ids(&elsewhere).contains(&"crates/cli/AGENTS.md#1"),
        "{:?}",
        ids(&elsewhere)
    );
    assert!(
        ids(&elsewhere).contains(&"AGENTS.md#2"),
        "{:?}",
        ids(&elsewhere)
    );
}

#[test]
fn a_turn_keeps_always_rules_within_its_budget_and_cuts_a_long_body_with_a_marker() {
    let engine = synced();
    let turn = engine
        .turn(
            &TurnRequest::new("what is the capital of Peru")
                .with_budget_tokens(1000)
                .with_file("app/main.py"),
        )
        .unwrap();
    let rules: Vec<&str> = turn.rules.hits.iter().map(|h| h.id.as_str()).collect();
    assert!(
        rules.starts_with(&[".claude/rules/commits.md"]),
        "{rules:?}"
    );
    assert!(
        rules.contains(&".cursor/rules/python-style.mdc"),
        "{rules:?}"
    );
    let block = turn.render();
    assert!(
        block.contains("- security:\n  Never print secrets"),
        "{block}"
    );
    assert!(block.contains("  - Type every public function."), "{block}");
    assert!(ruchedb::count_tokens(&block) <= 1000);

    // A long body, cut to the budget with a marker rather than left out.
    let engine = Engine::builder().temporary().unwrap();
    let body: String = (1..=200)
        .map(|i| format!("{i}. Step {i} of the release: check the artefacts of stage {i}.\n"))
        .collect();
    engine
        .upsert_rules([ruchedb::Rule::new("release", "releasing", "")
            .with_apply(Apply::Always)
            .with_body(body)])
        .unwrap();
    engine.commit().unwrap();
    let turn = engine
        .turn(&TurnRequest::new("hello").with_budget_tokens(300))
        .unwrap();
    let block = turn.render();
    assert!(ruchedb::count_tokens(&block) <= 300, "{block}");
    assert!(block.contains("1. Step 1 of the release"), "{block}");
    assert!(block.contains("[…cut to the budget]"), "{block}");
    assert!(!block.contains("200. Step 200"), "{block}");
    let cut = turn.rules.hits[0].document.as_rule().unwrap();
    assert!(
        cut.body
            .as_deref()
            .unwrap()
            .ends_with("[…cut to the budget]")
    );
}

#[test]
fn a_skill_is_found_by_its_description_with_the_path_to_load() {
    let engine = synced();
    let turn = engine
        .turn(&TurnRequest::new("write the release notes for version 2.3"))
        .unwrap();
    assert_eq!(
        turn.tools.hits.first().map(|h| h.id.as_str()),
        Some("skills/release-notes/SKILL.md"),
        "{:?}",
        turn.tools.hits
    );
    let block = turn.render();
    assert!(
        block.contains("(load skills/release-notes/SKILL.md)"),
        "{block}"
    );
    assert!(!block.contains("number of reviewers"), "{block}");
}

#[test]
fn a_malformed_rule_file_is_named_with_its_line_and_the_others_sync() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".windsurf/rules")).unwrap();
    std::fs::create_dir_all(root.join(".cursor/rules")).unwrap();
    std::fs::create_dir_all(root.join("skills/x")).unwrap();
    std::fs::write(
        root.join(".windsurf/rules/bad.md"),
        "---\ndescription: x\ntrigger: sometimes\n---\nBody.\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".cursor/rules/globs.mdc"),
        "---\ndescription: y\nglobs: 3\n---\nBody.\n",
    )
    .unwrap();
    std::fs::write(root.join("skills/x/SKILL.md"), "---\nname: x\n---\nBody.\n").unwrap();
    std::fs::write(root.join(".cursorrules"), "Be kind.\n").unwrap();
    let engine = Engine::builder().temporary().unwrap();
    let report = engine
        .sync(&["."], &SyncOptions::default().with_base(root))
        .unwrap();
    let failed: Vec<(String, Option<u32>)> = report
        .files
        .iter()
        .filter(|f| f.change == FileChange::Failed)
        .map(|f| (f.path.clone(), f.line))
        .collect();
    assert_eq!(
        failed,
        [
            (".cursor/rules/globs.mdc".to_string(), Some(3)),
            (".windsurf/rules/bad.md".to_string(), Some(3)),
            ("skills/x/SKILL.md".to_string(), Some(1)),
        ],
        "{report:#?}"
    );
    assert_eq!(report.added, 1);
}

#[test]
fn editors_unquoted_globs_emptied_files_and_folders_from_the_walked_root() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let write = |name: &str, text: &str| {
        let path = project.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // As Cursor writes it: globs unquoted (YAML reads `*` as an alias), a colon in the
    // description.
    write(
        ".cursor/rules/web.mdc",
        "---\ndescription: Rules for: the web app\nglobs: *.ts,*.tsx\nalwaysApply: false\n---\nUse strict mode.\n",
    );
    write(".cursorrules", "Be brief.\n");
    write("AGENTS.md", "## Testing\n\nRun `make test`.\n");
    write(".claude/CLAUDE.md", "## Style\n\nFour spaces.\n");
    let engine = Engine::builder().temporary().unwrap();
    // Walked as `project` from its parent: folders are the project's own.
    let options = SyncOptions::default().with_base(dir.path());
    let report = engine.sync(&["project"], &options).unwrap();
    assert_eq!((report.added, report.failed), (4, 0), "{report:#?}");
    let web = engine
        .get(Kind::Rule, "default", "project/.cursor/rules/web.mdc")
        .unwrap()
        .unwrap();
    let web = web.as_rule().unwrap();
    assert_eq!(web.apply, Apply::Files);
    assert_eq!(web.globs, ["*.ts", "*.tsx"]);
    assert_eq!(web.condition, "Rules for: the web app");
    for id in ["project/AGENTS.md#1", "project/.claude/CLAUDE.md#1"] {
        let rule = engine.get(Kind::Rule, "default", id).unwrap().unwrap();
        assert_eq!(rule.as_rule().unwrap().folder.as_deref(), Some("."), "{id}");
    }
    // The root's AGENTS.md is a candidate for any file the request names.
    let testing = engine
        .search(&SearchRequest::rules("how do I run the tests").with_file("src/lib.rs"))
        .unwrap();
    assert!(
        ids(&testing).contains(&"project/AGENTS.md#1"),
        "{:?}",
        ids(&testing)
    );
    // An emptied rule file holds no rule: its former rule goes.
    write(".cursorrules", "");
    let emptied = engine.sync(&["project"], &options).unwrap();
    assert_eq!((emptied.changed, emptied.failed), (1, 0), "{emptied:#?}");
    assert!(
        engine
            .get(Kind::Rule, "default", "project/.cursorrules")
            .unwrap()
            .is_none()
    );
    // `@id` names a rule indexed by hand too.
    engine
        .upsert_rules([ruchedb::Rule::new(
            "escalate",
            "hand the chat over",
            "call a lead",
        )])
        .unwrap();
    engine.commit().unwrap();
    let named = engine
        .search(&SearchRequest::rules("please follow @escalate"))
        .unwrap();
    assert!(ids(&named).contains(&"escalate"), "{:?}", ids(&named));
}

#[test]
fn max_tokens_holds_with_the_rules_applied_whatever_their_relevance() {
    let engine = synced();
    let budget = 40;
    let response = engine
        .search(
            &SearchRequest::rules("the production database is down, we have an outage")
                .with_max_tokens(budget),
        )
        .unwrap();
    let spent: usize = response
        .hits
        .iter()
        .map(|h| {
            let rule = h.document.as_rule().unwrap();
            ruchedb::count_tokens(&rule.text())
                + rule.body.as_deref().map_or(0, ruchedb::count_tokens)
        })
        .sum();
    assert!(spent <= budget, "{spent} > {budget}: {:?}", ids(&response));
    assert!(!response.hits.is_empty());
    assert_eq!(response.selection.metadata["tokens"], spent);
}
