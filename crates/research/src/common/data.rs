//! Reading the evaluation data of `../shared/eval` (shared by the examples).

#![allow(dead_code)]

use std::path::Path;

pub type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

pub fn read_jsonl(path: &Path) -> Res<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?)
}

/// A `.npy` v1 file of little-endian f32 rows.
pub fn read_npy(path: &Path) -> Res<Vec<Vec<f32>>> {
    let data = std::fs::read(path)?;
    let start = 10 + usize::from(u16::from_le_bytes([data[8], data[9]]));
    let header = String::from_utf8_lossy(&data[10..start]);
    let shape = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or("no shape")?;
    let cols: usize = shape.split(',').nth(1).ok_or("not 2-d")?.trim().parse()?;
    let values: Vec<f32> = data[start..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok(values.chunks(cols).map(<[f32]>::to_vec).collect())
}

/// RFC 4180 CSV: quoted fields may hold commas, doubled quotes and newlines.
pub fn read_csv(path: &Path) -> Res<Vec<Vec<String>>> {
    let (mut rows, mut row, mut field, mut quoted) = (Vec::new(), Vec::new(), String::new(), false);
    let text = std::fs::read_to_string(path)?;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => row.push(std::mem::take(&mut field)),
            '\n' if !quoted => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            '\r' if !quoted => {}
            c => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    Ok(rows)
}

/// One SciFact abstract: its id, `title + " " + text`, and its MiniLM vector.
pub struct Abstract {
    pub id: String,
    pub content: String,
    pub vector: Vec<f32>,
}

/// One SciFact claim with relevance judgements: its text, its MiniLM vector, and the
/// relevant abstracts with their grade.
pub struct Claim {
    pub text: String,
    pub vector: Vec<f32>,
    pub qrels: std::collections::HashMap<String, u32>,
}

/// SciFact train (`eval/scifact`): the abstracts, and the claims that have judgements.
pub fn scifact(eval: &Path) -> Res<(Vec<Abstract>, Vec<Claim>)> {
    let dir = eval.join("scifact");
    let docs = read_jsonl(&dir.join("corpus.jsonl"))?;
    let vectors = read_npy(&dir.join("minilm_corpus.f32.npy"))?;
    let abstracts = docs
        .iter()
        .zip(vectors)
        .map(|(doc, vector)| {
            let content = format!(
                "{} {}",
                doc["title"].as_str().unwrap_or(""),
                doc["text"].as_str().unwrap_or("")
            );
            Abstract {
                id: doc["_id"].as_str().unwrap_or_default().to_string(),
                content: content.trim().to_string(),
                vector,
            }
        })
        .collect();
    let mut qrels: std::collections::HashMap<String, std::collections::HashMap<String, u32>> =
        std::collections::HashMap::new();
    for line in std::fs::read_to_string(dir.join("qrels/train.tsv"))?
        .lines()
        .skip(1)
    {
        let f: Vec<&str> = line.split('\t').collect();
        if let [query, doc, grade, ..] = f.as_slice() {
            qrels
                .entry((*query).into())
                .or_default()
                .insert((*doc).into(), grade.trim().parse()?);
        }
    }
    let texts = read_jsonl(&dir.join("queries.train.jsonl"))?;
    let vectors = read_npy(&dir.join("minilm_queries.train.f32.npy"))?;
    let claims = texts
        .iter()
        .zip(vectors)
        .filter_map(|(q, vector)| {
            Some(Claim {
                text: q["text"].as_str()?.to_string(),
                qrels: qrels.get(q["_id"].as_str()?)?.clone(),
                vector,
            })
        })
        .collect();
    Ok((abstracts, claims))
}
