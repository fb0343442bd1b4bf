use ruchedb::{ErrorKind, Kind};

use super::collections::Meta;
use super::*;

#[test]
fn locations_parse_and_print() {
    let at: Location = "milvus://127.0.0.1:19530/support".parse().unwrap();
    assert_eq!(at.endpoint, "http://127.0.0.1:19530");
    assert_eq!(at.name, "support");
    assert_eq!(at.to_string(), "milvus://127.0.0.1:19530/support");
    for bad in [
        "/tmp/x",
        "milvus://host",
        "milvus://host/9x",
        "milvus:///x",
        "milvus://h/a-b",
    ] {
        let err = bad.parse::<Location>().unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidInput { .. }),
            "{bad}"
        );
    }
}

#[test]
fn keys_differ_by_kind_tenant_and_id() {
    let keys = [
        doc_key(Kind::Rule, "t", "a"),
        doc_key(Kind::Chunk, "t", "a"),
        doc_key(Kind::Rule, "t2", "a"),
        doc_key(Kind::Rule, "t", "a2"),
        doc_key(Kind::Rule, "ta", ""),
    ];
    let unique: std::collections::HashSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len());
}

#[test]
fn meta_round_trips_and_checks_its_format() {
    let meta = Meta {
        format: FORMAT,
        dimensions: [384; Kind::COUNT],
        embedder: "default".into(),
        collection_per_tenant: true,
    };
    assert_eq!(Meta::from_json(&meta.to_json()).unwrap(), meta);
    let newer = meta.to_json().replace("\"format\":1", "\"format\":9");
    assert!(matches!(
        Meta::from_json(&newer).unwrap_err().kind(),
        ErrorKind::IncompatibleFormat { .. }
    ));
}
