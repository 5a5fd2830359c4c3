//! The shape of the network and the feature transformer's output, the data that
//! [`super::accumulator`] (which computes it) and [`super::network`] (which reads
//! it) share. Both import this module and neither imports the other for it: the
//! accumulator needs the network's weights, the network only the accumulator's
//! values, which live here.

/// Outputs of the feature transformer per perspective.
pub const HALF_DIMENSIONS: usize = 256;
/// Inputs of the first hidden layer (both halves).
pub const HIDDEN1_INPUTS: usize = 2 * HALF_DIMENSIONS;
/// Outputs of the first hidden layer.
pub const HIDDEN1_OUTPUTS: usize = 32;
/// Outputs of the second hidden layer.
pub const HIDDEN2_OUTPUTS: usize = 32;
/// Hidden-layer weights are fixed-point with this many fraction bits.
pub const WEIGHT_SCALE_BITS: u32 = 6;

/// Both halves of the feature transformer output, indexed by perspective
/// (`Color::to_index()`: Black 0, White 1). Computed and updated by the methods in
/// [`super::accumulator`].
#[derive(Clone, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Accumulator {
    /// `values[perspective][i]`.
    pub values: [[i16; HALF_DIMENSIONS]; 2],
}

impl Default for Accumulator {
    fn default() -> Self {
        Self {
            values: [[0; HALF_DIMENSIONS]; 2],
        }
    }
}

impl std::fmt::Debug for Accumulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accumulator")
            .field("black", &&self.values[0][..8])
            .field("white", &&self.values[1][..8])
            .finish_non_exhaustive()
    }
}
