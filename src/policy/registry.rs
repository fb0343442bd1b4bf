//! The policy registry: policies created by name from a JSON configuration map.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use super::{ActionSelectionPolicy, BeamSearchPolicy, GreedyPolicy, MctsPolicy, SamplingPolicy};
use crate::Error;

/// Creates a policy from its configuration map.
type Factory =
    Box<dyn Fn(&Map<String, Value>) -> crate::Result<Box<dyn ActionSelectionPolicy>> + Send + Sync>;

/// Creates action selection policies by name, built-in or registered by the caller.
///
/// A new registry knows the built-ins: `"greedy"` ([`GreedyPolicy`]), `"sampling"`
/// ([`SamplingPolicy`]), `"beam_search"` ([`BeamSearchPolicy`]) and `"mcts"`
/// ([`MctsPolicy`]). Their configuration maps hold the keys listed in each policy's
/// `Defaults` section; absent keys take the defaults, and unknown keys or bad values are
/// errors. Custom policies are added with [`register`](PolicyRegistry::register).
///
/// The registry is a plain value, not a global: create one where it is needed.
///
/// # Example
///
/// ```
/// use ruchedb::policy::PolicyRegistry;
///
/// let registry = PolicyRegistry::new();
/// let config = serde_json::json!({"temperature": 0.5});
/// let policy = registry.get_action("sampling", config.as_object().unwrap())?;
/// assert_eq!(policy.name(), "sampling");
///
/// let greedy = registry.get_action("greedy", &serde_json::Map::new())?;
/// assert_eq!(greedy.name(), "greedy");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PolicyRegistry {
    factories: BTreeMap<String, Factory>,
}

impl PolicyRegistry {
    /// Creates a registry that knows the four built-in policies.
    pub fn new() -> PolicyRegistry {
        let mut factories: BTreeMap<String, Factory> = BTreeMap::new();
        factories.insert("greedy".to_owned(), Box::new(greedy_from_config));
        factories.insert("sampling".to_owned(), Box::new(sampling_from_config));
        factories.insert("beam_search".to_owned(), Box::new(beam_search_from_config));
        factories.insert("mcts".to_owned(), Box::new(mcts_from_config));
        PolicyRegistry { factories }
    }

    /// Registers a custom policy under `name`.
    ///
    /// `factory` receives the configuration map given to
    /// [`get_action`](PolicyRegistry::get_action) as is: merging it with defaults and
    /// rejecting unknown keys is up to the factory (errors of kind
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) can be built with
    /// `Error::from(ErrorKind::InvalidConfig { .. })`).
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput)
    /// when `name` is empty or already registered (built-ins cannot be replaced).
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::policy::{ActionSelectionPolicy, GreedyPolicy, PolicyRegistry};
    ///
    /// let mut registry = PolicyRegistry::new();
    /// registry.register("my_greedy", |_config| {
    ///     Ok(Box::new(GreedyPolicy::new()) as Box<dyn ActionSelectionPolicy>)
    /// })?;
    /// assert!(registry.contains("my_greedy"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn register<F>(&mut self, name: impl Into<String>, factory: F) -> crate::Result<()>
    where
        F: Fn(&Map<String, Value>) -> crate::Result<Box<dyn ActionSelectionPolicy>>
            + Send
            + Sync
            + 'static,
    {
        let name = name.into();
        if name.is_empty() {
            return Err(Error::invalid_input("policy name must not be empty"));
        }
        if self.factories.contains_key(&name) {
            return Err(Error::invalid_input(format!(
                "policy `{name}` is already registered"
            )));
        }
        self.factories.insert(name, Box::new(factory));
        Ok(())
    }

    /// Creates the policy registered as `name`, configured by `config`.
    ///
    /// # Errors
    ///
    /// Returns an error of kind [`ErrorKind::UnknownName`](crate::ErrorKind::UnknownName)
    /// (with `what` = `"policy"`) when no policy has that name, and whatever the factory
    /// returns; for the built-ins, an error of kind
    /// [`ErrorKind::InvalidConfig`](crate::ErrorKind::InvalidConfig) naming the key when a
    /// key is unknown or its value has the wrong type or range.
    pub fn get_action(
        &self,
        name: &str,
        config: &Map<String, Value>,
    ) -> crate::Result<Box<dyn ActionSelectionPolicy>> {
        let factory = self
            .factories
            .get(name)
            .ok_or_else(|| Error::unknown_name("policy", name))?;
        factory(config)
    }

    /// Returns whether a policy is registered as `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }

    /// Returns the registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.factories.keys().map(String::as_str)
    }
}

impl Default for PolicyRegistry {
    /// Same as [`PolicyRegistry::new`].
    fn default() -> PolicyRegistry {
        PolicyRegistry::new()
    }
}

impl fmt::Debug for PolicyRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyRegistry")
            .field("names", &self.factories.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn greedy_from_config(
    config: &Map<String, Value>,
) -> crate::Result<Box<dyn ActionSelectionPolicy>> {
    if let Some(key) = config.keys().next() {
        return Err(unknown_key("greedy", key, &[]));
    }
    Ok(Box::new(GreedyPolicy::new()))
}

fn sampling_from_config(
    config: &Map<String, Value>,
) -> crate::Result<Box<dyn ActionSelectionPolicy>> {
    let mut builder = SamplingPolicy::builder();
    for (key, value) in config {
        builder = match key.as_str() {
            "temperature" => builder.temperature(number(key, value)?),
            "min_probability" => builder.min_probability(number(key, value)?),
            _ => {
                return Err(unknown_key(
                    "sampling",
                    key,
                    &["temperature", "min_probability"],
                ));
            }
        };
    }
    Ok(Box::new(builder.build()?))
}

fn beam_search_from_config(
    config: &Map<String, Value>,
) -> crate::Result<Box<dyn ActionSelectionPolicy>> {
    let mut builder = BeamSearchPolicy::builder();
    for (key, value) in config {
        builder = match key.as_str() {
            "beam_width" => builder.beam_width(count(key, value)?),
            "length_penalty" => builder.length_penalty(number(key, value)?),
            "diversity_penalty" => builder.diversity_penalty(number(key, value)?),
            _ => {
                return Err(unknown_key(
                    "beam_search",
                    key,
                    &["beam_width", "length_penalty", "diversity_penalty"],
                ));
            }
        };
    }
    Ok(Box::new(builder.build()?))
}

fn mcts_from_config(config: &Map<String, Value>) -> crate::Result<Box<dyn ActionSelectionPolicy>> {
    let mut builder = MctsPolicy::builder();
    for (key, value) in config {
        builder = match key.as_str() {
            "exploration_constant" => builder.exploration_constant(number(key, value)?),
            "num_simulations" => builder.num_simulations(count(key, value)?),
            "simulation_depth" => builder.simulation_depth(count(key, value)?),
            _ => {
                return Err(unknown_key(
                    "mcts",
                    key,
                    &[
                        "exploration_constant",
                        "num_simulations",
                        "simulation_depth",
                    ],
                ));
            }
        };
    }
    Ok(Box::new(builder.build()?))
}

/// Reads a JSON number (an integer is accepted too).
fn number(key: &str, value: &Value) -> crate::Result<f64> {
    value
        .as_f64()
        .ok_or_else(|| Error::invalid_config(key, format!("expected a number, got {value}")))
}

/// Reads a JSON non-negative integer.
fn count(key: &str, value: &Value) -> crate::Result<usize> {
    value
        .as_u64()
        .and_then(|count| usize::try_from(count).ok())
        .ok_or_else(|| {
            Error::invalid_config(key, format!("expected a non-negative integer, got {value}"))
        })
}

/// The error for a configuration key the policy does not know.
fn unknown_key(policy: &str, key: &str, known: &[&str]) -> Error {
    let message = if known.is_empty() {
        format!("policy `{policy}` takes no configuration")
    } else {
        format!(
            "unknown key for policy `{policy}` (expected one of: {})",
            known.join(", ")
        )
    };
    Error::invalid_config(key, message)
}
