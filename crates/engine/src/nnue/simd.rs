//! The hot loops of NNUE inference: adding and subtracting 256-wide `i16`
//! columns (the incremental accumulator update) and `u8 x i8` dot products (the
//! hidden layers). Each has a portable scalar version and an AVX2 version chosen
//! at run time; both give identical results (the tests run both).
//!
//! Accumulator arithmetic wraps on overflow in both versions, as YaneuraOu's
//! does, so an incremental update always equals a full recomputation.

use std::sync::OnceLock;

/// The width of one accumulator half.
pub const LANES: usize = 256;

/// Which implementation of the hot loops runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Plain Rust, any CPU.
    Scalar,
    /// x86-64 AVX2 intrinsics (only chosen when the CPU has AVX2).
    Avx2,
}

impl Backend {
    /// The fastest implementation this CPU supports (detected once per process).
    #[must_use]
    pub fn detect() -> Self {
        static DETECTED: OnceLock<Backend> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            if avx2_available() {
                Backend::Avx2
            } else {
                Backend::Scalar
            }
        })
    }

    /// Every implementation usable on this CPU (the scalar one always).
    #[must_use]
    pub fn available() -> Vec<Self> {
        let mut all = vec![Backend::Scalar];
        if avx2_available() {
            all.push(Backend::Avx2);
        }
        all
    }

    /// This backend if the CPU supports it, else the scalar one (so a caller can
    /// never reach AVX2 code on a CPU without it).
    #[inline]
    fn checked(self) -> Self {
        if self == Backend::Avx2 && Backend::detect() == Backend::Avx2 {
            Backend::Avx2
        } else {
            Backend::Scalar
        }
    }
}

fn avx2_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `dst += column` lane by lane (wrapping).
#[inline]
pub fn add_assign(backend: Backend, dst: &mut [i16; LANES], column: &[i16; LANES]) {
    match backend.checked() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `checked` returns Avx2 only when the CPU supports AVX2.
        Backend::Avx2 => unsafe { avx2::add_assign(dst, column) },
        _ => {
            for (d, c) in dst.iter_mut().zip(column) {
                *d = d.wrapping_add(*c);
            }
        }
    }
}

/// `dst -= column` lane by lane (wrapping).
#[inline]
pub fn sub_assign(backend: Backend, dst: &mut [i16; LANES], column: &[i16; LANES]) {
    match backend.checked() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `checked` returns Avx2 only when the CPU supports AVX2.
        Backend::Avx2 => unsafe { avx2::sub_assign(dst, column) },
        _ => {
            for (d, c) in dst.iter_mut().zip(column) {
                *d = d.wrapping_sub(*c);
            }
        }
    }
}

/// `sum(input[i] * weights[i])` for inputs in 0..=127 and lengths that are a
/// multiple of 32.
#[inline]
#[must_use]
pub fn dot_u8_i8(backend: Backend, input: &[u8], weights: &[i8]) -> i32 {
    debug_assert_eq!(input.len(), weights.len());
    match backend.checked() {
        #[cfg(target_arch = "x86_64")]
        Backend::Avx2 if input.len().is_multiple_of(32) && input.len() == weights.len() => {
            // SAFETY: `checked` returns Avx2 only when the CPU supports AVX2; the
            // lengths are equal multiples of 32 as the kernel requires.
            unsafe { avx2::dot_u8_i8(input, weights) }
        }
        _ => input
            .iter()
            .zip(weights)
            .map(|(&x, &w)| i32::from(x) * i32::from(w))
            .sum(),
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_shuffle_epi32, _mm256_add_epi16,
        _mm256_add_epi32, _mm256_castsi256_si128, _mm256_extracti128_si256, _mm256_loadu_si256,
        _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_set1_epi16, _mm256_setzero_si256,
        _mm256_storeu_si256, _mm256_sub_epi16,
    };

    use super::LANES;

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn add_assign(dst: &mut [i16; LANES], column: &[i16; LANES]) {
        for i in (0..LANES).step_by(16) {
            // SAFETY: i + 16 <= LANES, so both 32-byte unaligned accesses stay
            // inside the arrays.
            unsafe {
                let d = dst.as_mut_ptr().add(i).cast::<__m256i>();
                let c = column.as_ptr().add(i).cast::<__m256i>();
                _mm256_storeu_si256(
                    d,
                    _mm256_add_epi16(_mm256_loadu_si256(d), _mm256_loadu_si256(c)),
                );
            }
        }
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn sub_assign(dst: &mut [i16; LANES], column: &[i16; LANES]) {
        for i in (0..LANES).step_by(16) {
            // SAFETY: as in `add_assign`.
            unsafe {
                let d = dst.as_mut_ptr().add(i).cast::<__m256i>();
                let c = column.as_ptr().add(i).cast::<__m256i>();
                _mm256_storeu_si256(
                    d,
                    _mm256_sub_epi16(_mm256_loadu_si256(d), _mm256_loadu_si256(c)),
                );
            }
        }
    }

    /// # Safety
    /// The CPU must support AVX2; `input` and `weights` must have the same length,
    /// a multiple of 32. Inputs must be 0..=127 so that `maddubs` (which adds two
    /// products into a saturating i16) cannot saturate: 2 x 127 x 128 < 32768.
    #[target_feature(enable = "avx2")]
    pub unsafe fn dot_u8_i8(input: &[u8], weights: &[i8]) -> i32 {
        let ones = _mm256_set1_epi16(1);
        let mut sum = _mm256_setzero_si256();
        for i in (0..input.len()).step_by(32) {
            // SAFETY: i + 32 <= len for both slices (equal lengths, multiple of 32).
            let (x, w) = unsafe {
                (
                    _mm256_loadu_si256(input.as_ptr().add(i).cast::<__m256i>()),
                    _mm256_loadu_si256(weights.as_ptr().add(i).cast::<__m256i>()),
                )
            };
            let pairs = _mm256_maddubs_epi16(x, w);
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(pairs, ones));
        }
        let half = _mm_add_epi32(
            _mm256_castsi256_si128(sum),
            _mm256_extracti128_si256::<1>(sum),
        );
        let quarter = _mm_add_epi32(half, _mm_shuffle_epi32::<0b01_00_11_10>(half));
        let eighth = _mm_add_epi32(quarter, _mm_shuffle_epi32::<0b10_11_00_01>(quarter));
        _mm_cvtsi128_si32(eighth)
    }
}
