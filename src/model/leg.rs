//! [`PerLeg`]: one value for each leg of a search.

use serde::{Deserialize, Serialize};

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
