//! `ruche select`: k-selection over the scores of standard input.

use std::io::{BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::output;

/// One line of `ruche select` input.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SelectLine {
    strategy: String,
    #[serde(default)]
    params: serde_json::Map<String, serde_json::Value>,
    max_k: usize,
    #[serde(default = "one")]
    min_k: usize,
    scores: Vec<f64>,
}

pub(crate) fn one() -> usize {
    1
}

/// Replays score lists under a strategy: one JSON line in, one JSON line out.
pub fn select() -> Result<ExitCode> {
    use std::io::BufRead;
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for (idx, line) in stdin.lines().enumerate() {
        let line_no = idx + 1;
        let line = line.with_context(|| format!("line {line_no}: cannot read"))?;
        if line.trim().is_empty() {
            continue;
        }
        let result = (|| -> Result<serde_json::Value> {
            let input: SelectLine = serde_json::from_str(&line)?;
            let config =
                ruchedb::select::SelectionConfig::from_params(&input.strategy, &input.params)?;
            let strategy = config.build()?;
            let result = strategy.select_scores(&input.scores, input.max_k, input.min_k)?;
            Ok(serde_json::json!({
                "selected": result.selected,
                "cutoff_score": result.cutoff_score,
                "method": result.method,
                "metadata": result.metadata,
            }))
        })()
        .with_context(|| format!("line {line_no}"))?;
        output::write_line(&mut out, &result)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
