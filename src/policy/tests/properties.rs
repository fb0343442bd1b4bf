//! Property tests of every built-in policy against naive oracles.

use proptest::prelude::*;

use super::*;

fn arb_candidates() -> impl Strategy<Value = Vec<Candidate>> {
    proptest::collection::vec((0..3_usize, 0..5_u8), 1..10).prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(idx, (action, score_step))| {
                // Scores on a coarse grid so that ties are common.
                Candidate::new(["code", "final", "search"][action])
                    .with_id(format!("c{idx}"))
                    .with_score(f64::from(score_step) * 0.25)
            })
            .collect()
    })
}

fn built_ins() -> Vec<Box<dyn ActionSelectionPolicy>> {
    let registry = PolicyRegistry::new();
    ["greedy", "sampling", "beam_search", "mcts"]
        .into_iter()
        .map(|name| registry.get_action(name, &Map::new()).unwrap())
        .collect()
}

/// A candidate's position in the list, found by its unique id.
fn position(candidates: &[Candidate], candidate: &Candidate) -> usize {
    candidates
        .iter()
        .position(|c| c.key() == candidate.key())
        .unwrap()
}

proptest! {
    #[test]
    fn greedy_selects_the_first_maximum(candidates in arb_candidates()) {
        let mut rng = seeded_rng(0);
        let mut ctx = PolicyContext::new(&mut rng);
        let selected = GreedyPolicy::new().select(&candidates, &mut ctx).unwrap();
        // Naive oracle: the first candidate whose score no other candidate exceeds.
        let scores: Vec<f64> = candidates.iter().map(|c| c.base_score().unwrap()).collect();
        let best = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let oracle = scores.iter().position(|s| *s == best).unwrap();
        prop_assert_eq!(position(&candidates, selected), oracle);
    }

    #[test]
    fn rankings_are_sorted_permutations_with_stable_ties(
        candidates in arb_candidates(),
        step in 0..20_usize,
    ) {
        let mut rng = seeded_rng(0);
        let ctx = PolicyContext::new(&mut rng).with_step(step);
        for policy in built_ins() {
            let ranked = policy.rank(&candidates, &ctx).unwrap();
            prop_assert_eq!(ranked.len(), candidates.len());
            let mut positions: Vec<usize> =
                ranked.iter().map(|(c, _)| position(&candidates, c)).collect();
            for pair in ranked.windows(2).zip(positions.windows(2)) {
                let ((left, right), (left_pos, right_pos)) =
                    ((&pair.0[0], &pair.0[1]), (pair.1[0], pair.1[1]));
                prop_assert!(left.1 >= right.1);
                if left.1 == right.1 {
                    prop_assert!(left_pos < right_pos);
                }
            }
            positions.sort_unstable();
            prop_assert_eq!(positions, (0..candidates.len()).collect::<Vec<_>>());
        }
    }

    #[test]
    fn deterministic_policies_select_their_top_ranked(
        candidates in arb_candidates(),
        step in 0..20_usize,
    ) {
        let mut rng = seeded_rng(0);
        let mut ctx = PolicyContext::new(&mut rng).with_step(step);
        let registry = PolicyRegistry::new();
        for name in ["greedy", "beam_search"] {
            let mut policy = registry.get_action(name, &Map::new()).unwrap();
            let top = policy.rank(&candidates, &ctx).unwrap()[0].0;
            let selected = policy.select(&candidates, &mut ctx).unwrap();
            prop_assert_eq!(selected.key(), top.key());
        }
    }
}
