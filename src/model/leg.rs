//! The legs of a search: [`Leg`] names one, [`PerLeg`] holds one value for each.

use serde::{Deserialize, Serialize};

/// One leg of a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Leg {
    /// The text (BM25) leg.
    Text,
    /// The vector leg.
    Vector,
    /// The entity-graph leg.
    Graph,
}

impl Leg {
    /// Every leg: text, vector, graph.
    pub const ALL: [Leg; 3] = [Leg::Text, Leg::Vector, Leg::Graph];
}

/// One value per leg of a search: the BM25 text leg, the vector leg and the entity-graph
/// leg, always by name.
///
/// `PerLeg<bool>` is a set of legs (which legs ran, which found a hit),
/// `PerLeg<Option<f64>>` a candidate's raw scores, `PerLeg<f64>` the feedback factors of
/// the legs' weights, `PerLeg<usize>` counts and `PerLeg<u64>` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PerLeg<T> {
    /// The BM25 (text) leg.
    pub text: T,
    /// The vector leg.
    pub vector: T,
    /// The entity-graph leg.
    pub graph: T,
}

impl<T> PerLeg<T> {
    /// The value of each leg, from `f`.
    pub fn from_fn(mut f: impl FnMut(Leg) -> T) -> PerLeg<T> {
        PerLeg {
            text: f(Leg::Text),
            vector: f(Leg::Vector),
            graph: f(Leg::Graph),
        }
    }
}

impl<T> std::ops::Index<Leg> for PerLeg<T> {
    type Output = T;

    fn index(&self, leg: Leg) -> &T {
        match leg {
            Leg::Text => &self.text,
            Leg::Vector => &self.vector,
            Leg::Graph => &self.graph,
        }
    }
}

impl<T> std::ops::IndexMut<Leg> for PerLeg<T> {
    fn index_mut(&mut self, leg: Leg) -> &mut T {
        match leg {
            Leg::Text => &mut self.text,
            Leg::Vector => &mut self.vector,
            Leg::Graph => &mut self.graph,
        }
    }
}

impl<T: Copy> PerLeg<T> {
    /// The same value for every leg.
    pub const fn splat(value: T) -> PerLeg<T> {
        PerLeg {
            text: value,
            vector: value,
            graph: value,
        }
    }
}

impl PerLeg<bool> {
    /// The text and vector legs.
    pub const BOTH: PerLeg<bool> = PerLeg {
        text: true,
        vector: true,
        graph: false,
    };
    /// The text leg alone.
    pub const TEXT: PerLeg<bool> = PerLeg {
        text: true,
        vector: false,
        graph: false,
    };
    /// The vector leg alone.
    pub const VECTOR: PerLeg<bool> = PerLeg {
        text: false,
        vector: true,
        graph: false,
    };
    /// No leg.
    pub const NONE: PerLeg<bool> = PerLeg::splat(false);
}

impl PerLeg<f64> {
    /// 1.0 for every leg: weights unchanged (no feedback yet).
    pub const ONES: PerLeg<f64> = PerLeg::splat(1.0);
}
