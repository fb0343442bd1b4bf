//! A custom action selection policy, epsilon-greedy with decaying epsilon: with probability
//! epsilon it explores (a random candidate), otherwise it exploits (the best-scored one).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use ruchedb::policy::{
    ActionSelectionPolicy, Candidate, GreedyPolicy, PolicyContext, PolicyRegistry,
};
use ruchedb::{Error, ErrorKind};
use serde_json::{Map, Value, json};

// # Step 1: the policy, whose state (the current epsilon) belongs to whoever holds it
struct EpsilonGreedy {
    epsilon: f64,
    epsilon_decay: f64,
    min_epsilon: f64,
}

impl ActionSelectionPolicy for EpsilonGreedy {
    fn name(&self) -> &str {
        "epsilon_greedy"
    }

    fn select<'c>(
        &mut self,
        candidates: &'c [Candidate],
        ctx: &mut PolicyContext<'_>,
    ) -> ruchedb::Result<&'c Candidate> {
        // Ranking first also rejects empty lists and non-finite scores.
        let best = self.rank(candidates, ctx)?[0].0;
        // Randomness comes only from the caller's RNG, so a seed replays the episode.
        let selected = if ctx.rng().random::<f64>() < self.epsilon {
            &candidates[ctx.rng().random_range(0..candidates.len())]
        } else {
            best
        };
        self.epsilon = (self.epsilon * self.epsilon_decay).max(self.min_epsilon);
        Ok(selected)
    }

    // Exploitation ranks like the greedy policy: by confidence or score.
    fn rank<'c>(
        &self,
        candidates: &'c [Candidate],
        ctx: &PolicyContext<'_>,
    ) -> ruchedb::Result<Vec<(&'c Candidate, f64)>> {
        GreedyPolicy::new().rank(candidates, ctx)
    }
}

// # Step 2: the factory
//
// It merges the given configuration with the defaults and rejects unknown keys and bad
// values, naming the key, as the built-ins do.
fn epsilon_greedy(config: &Map<String, Value>) -> ruchedb::Result<Box<dyn ActionSelectionPolicy>> {
    let mut settings = [
        ("epsilon", 0.1),
        ("epsilon_decay", 0.99),
        ("min_epsilon", 0.01),
    ];
    for (key, value) in config {
        let invalid = |message: &str| {
            Error::from(ErrorKind::InvalidConfig {
                key: key.clone(),
                message: message.into(),
            })
        };
        let slot = settings.iter_mut().find(|(name, _)| name == key);
        let slot = slot.ok_or_else(|| invalid("unknown key for policy `epsilon_greedy`"))?;
        slot.1 = value
            .as_f64()
            .filter(|number| (0.0..=1.0).contains(number))
            .ok_or_else(|| invalid("expected a number between 0 and 1"))?;
    }
    let [epsilon, epsilon_decay, min_epsilon] = settings.map(|(_, value)| value);
    Ok(Box::new(EpsilonGreedy {
        epsilon,
        epsilon_decay,
        min_epsilon,
    }))
}

fn main() -> ruchedb::Result<()> {
    // # Step 3: register it next to the built-ins
    let mut registry = PolicyRegistry::new();
    registry.register("epsilon_greedy", epsilon_greedy)?;

    // # Step 4: create it by name, with part of its configuration
    let config = json!({"epsilon": 0.2, "epsilon_decay": 0.9});
    let mut policy = registry.get_action("epsilon_greedy", config.as_object().unwrap())?;
    let bad_config = json!({"epsilon": 2.0});
    if let Err(err) = registry.get_action("epsilon_greedy", bad_config.as_object().unwrap()) {
        println!("rejected configuration: {err}");
    }

    // # Step 5: select over an episode; as epsilon decays, the choice settles on the best
    let candidates = vec![
        Candidate::new("code")
            .with_id("approach_a")
            .with_confidence(0.7),
        Candidate::new("code")
            .with_id("approach_b")
            .with_confidence(0.9),
        Candidate::new("final")
            .with_id("approach_c")
            .with_confidence(0.4),
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut ctx = PolicyContext::new(&mut rng);
    let mut choices = Vec::new();
    for step in 0..30 {
        ctx.set_step(step);
        choices.push(policy.select(&candidates, &mut ctx)?.key().to_owned());
    }
    println!("{} choices: {}", policy.name(), choices.join(" "));
    let n_best = choices.iter().filter(|key| *key == "approach_b").count();
    println!("approach_b chosen {n_best} times out of {}", choices.len());
    Ok(())
}
