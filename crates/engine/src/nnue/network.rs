//! The network weights and the integer layers after the feature transformer.
//!
//! The accumulator halves (side to move first, then the other side) are clipped
//! to 0..=127 and form 512 `u8` inputs; two hidden layers `512 -> 32 -> 32` with
//! `i8` weights and `i32` biases follow, each output shifted right by 6 (the
//! weights' scale) and clipped to 0..=127; the output layer `32 -> 1` gives the
//! raw value, which divided by `FV_SCALE` is centipawns for the side to move.

use stera_rules::backend::types::Color;

use super::simd::{self, Backend};
use super::transformer::Accumulator;
// The sizes live with the accumulator's values; re-exported where they always were.
pub use super::transformer::{
    HALF_DIMENSIONS, HIDDEN1_INPUTS, HIDDEN1_OUTPUTS, HIDDEN2_OUTPUTS, WEIGHT_SCALE_BITS,
};

/// A HalfKP 256x2-32-32 network (about 64 MB; share it with `Arc`).
pub struct Network {
    ft_biases: [i16; HALF_DIMENSIONS],
    /// One column of 256 weights per input feature.
    ft_weights: Box<[[i16; HALF_DIMENSIONS]]>,
    l1_biases: [i32; HIDDEN1_OUTPUTS],
    /// Row-major: output `o` reads `l1_weights[o * 512..][..512]`.
    l1_weights: Box<[i8]>,
    l2_biases: [i32; HIDDEN2_OUTPUTS],
    l2_weights: Box<[i8]>,
    out_bias: i32,
    out_weights: [i8; HIDDEN2_OUTPUTS],
    description: String,
}

/// Copies `v` into a fixed array, zero-filling or cutting to `N` (the loader
/// always passes exactly `N` values).
fn to_array<T: Copy + Default, const N: usize>(v: &[T]) -> [T; N] {
    let mut out = [T::default(); N];
    for (o, x) in out.iter_mut().zip(v) {
        *o = *x;
    }
    out
}

impl Network {
    /// Builds a network from its parameters in file order (see
    /// [`super::file`]); used by the loader.
    #[allow(clippy::too_many_arguments)]
    #[must_use]
    pub(crate) fn from_parts(
        ft_biases: Vec<i16>,
        ft_weights: Vec<i16>,
        l1_biases: Vec<i32>,
        l1_weights: Vec<i8>,
        l2_biases: Vec<i32>,
        l2_weights: Vec<i8>,
        out_bias: i32,
        out_weights: Vec<i8>,
        description: String,
    ) -> Self {
        let ft_weights: Box<[[i16; HALF_DIMENSIONS]]> = ft_weights
            .chunks_exact(HALF_DIMENSIONS)
            .map(to_array::<i16, HALF_DIMENSIONS>)
            .collect();
        Self {
            ft_biases: to_array(&ft_biases),
            ft_weights,
            l1_biases: to_array(&l1_biases),
            l1_weights: l1_weights.into_boxed_slice(),
            l2_biases: to_array(&l2_biases),
            l2_weights: l2_weights.into_boxed_slice(),
            out_bias,
            out_weights: to_array(&out_weights),
            description,
        }
    }

    /// The file name and a content fingerprint, e.g. `nn.bin 1a2b3c4d`.
    #[must_use]
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The feature transformer biases (the accumulator of an empty board).
    #[inline]
    #[must_use]
    pub fn biases(&self) -> &[i16; HALF_DIMENSIONS] {
        &self.ft_biases
    }

    /// The feature transformer column of input `feature` (< 125 388), or `None`
    /// outside the input range.
    #[inline]
    #[must_use]
    pub fn column(&self, feature: usize) -> Option<&[i16; HALF_DIMENSIONS]> {
        self.ft_weights.get(feature)
    }

    /// The raw network output for the position whose accumulator is `acc`, with
    /// `side_to_move`'s half first.
    #[must_use]
    pub fn output(&self, acc: &Accumulator, side_to_move: Color, backend: Backend) -> i32 {
        let mut input = [0u8; HIDDEN1_INPUTS];
        for (half, perspective) in [side_to_move, side_to_move.flip()].into_iter().enumerate() {
            let values = &acc.values[perspective.to_index() & 1];
            let out = &mut input[half * HALF_DIMENSIONS..(half + 1) * HALF_DIMENSIONS];
            for (o, &v) in out.iter_mut().zip(values) {
                *o = v.clamp(0, 127) as u8;
            }
        }
        let mut hidden1 = [0u8; HIDDEN1_OUTPUTS];
        affine_clipped(
            backend,
            &input,
            &self.l1_weights,
            &self.l1_biases,
            &mut hidden1,
        );
        let mut hidden2 = [0u8; HIDDEN2_OUTPUTS];
        affine_clipped(
            backend,
            &hidden1,
            &self.l2_weights,
            &self.l2_biases,
            &mut hidden2,
        );
        self.out_bias
            .wrapping_add(simd::dot_u8_i8(backend, &hidden2, &self.out_weights))
    }

    /// Centipawns for the side to move: [`Network::output`] divided by `fv_scale`
    /// (truncating toward zero, as YaneuraOu does; `fv_scale` below 1 counts as 1).
    #[must_use]
    pub fn evaluate(
        &self,
        acc: &Accumulator,
        side_to_move: Color,
        fv_scale: i32,
        backend: Backend,
    ) -> i32 {
        self.output(acc, side_to_move, backend) / fv_scale.max(1)
    }
}

/// `out[o] = clamp((bias[o] + weights[o] . input) >> 6, 0, 127)`.
fn affine_clipped(backend: Backend, input: &[u8], weights: &[i8], biases: &[i32], out: &mut [u8]) {
    for ((o, row), &bias) in out
        .iter_mut()
        .zip(weights.chunks_exact(input.len()))
        .zip(biases)
    {
        let sum = bias.wrapping_add(simd::dot_u8_i8(backend, input, row));
        *o = (sum >> WEIGHT_SCALE_BITS).clamp(0, 127) as u8;
    }
}
