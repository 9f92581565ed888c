//! Numeric kernels of the forward pass: GEMM, LayerNorm, exact GELU, softmax attention.
//!
//! Activations are row-major `[tokens, width]` f32 buffers holding every token of every sequence
//! in the batch back to back (no padding rows), so each dense layer is one GEMM over the batch.

use super::weights::{LayerNorm, Linear};

/// Row and column strides of a matrix inside a slice, in elements.
#[derive(Clone, Copy)]
pub(crate) struct Strides {
    pub row: usize,
    pub col: usize,
}

impl Strides {
    pub const fn row_major(width: usize) -> Self {
        Strides { row: width, col: 1 }
    }

    /// The same storage read transposed.
    pub const fn t(self) -> Self {
        Strides {
            row: self.col,
            col: self.row,
        }
    }

    /// One past the largest offset touched by a `rows × cols` matrix.
    fn extent(self, rows: usize, cols: usize) -> usize {
        if rows == 0 || cols == 0 {
            0
        } else {
            (rows - 1) * self.row + (cols - 1) * self.col + 1
        }
    }
}

/// `c = alpha · a · b + beta · c` with `a: m × k`, `b: k × n`, `c: m × n`, any strides.
///
/// The only `unsafe` in the crate; the bounds asserts make it sound for every argument, and
/// `c` cannot alias `a` or `b` because it is a `&mut`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm(
    (m, k, n): (usize, usize, usize),
    alpha: f32,
    a: &[f32],
    sa: Strides,
    b: &[f32],
    sb: Strides,
    beta: f32,
    c: &mut [f32],
    sc: Strides,
) {
    assert!(sa.extent(m, k) <= a.len(), "gemm: a out of bounds");
    assert!(sb.extent(k, n) <= b.len(), "gemm: b out of bounds");
    assert!(sc.extent(m, n) <= c.len(), "gemm: c out of bounds");
    if m == 0 || n == 0 {
        return;
    }
    let s = |x: usize| x as isize;
    // SAFETY: the asserts above keep every element matrixmultiply reads or writes inside the
    // slices (strides are non-negative), and `c` is exclusively borrowed.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            alpha,
            a.as_ptr(),
            s(sa.row),
            s(sa.col),
            b.as_ptr(),
            s(sb.row),
            s(sb.col),
            beta,
            c.as_mut_ptr(),
            s(sc.row),
            s(sc.col),
        );
    }
}

/// `out[t] = x[t] · Wᵀ + b` for all `tokens` rows at once.
pub(crate) fn linear(layer: &Linear, x: &[f32], tokens: usize, out: &mut [f32]) {
    let out = &mut out[..tokens * layer.outputs];
    for row in out.chunks_exact_mut(layer.outputs) {
        row.copy_from_slice(&layer.bias);
    }
    gemm(
        (tokens, layer.inputs, layer.outputs),
        1.0,
        x,
        Strides::row_major(layer.inputs),
        &layer.weight,
        Strides::row_major(layer.inputs).t(),
        1.0,
        out,
        Strides::row_major(layer.outputs),
    );
}

/// `x[t] = LayerNorm(x[t] + residual[t])`, statistics accumulated in f64 (PyTorch uses a
/// biased variance, as here).
pub(crate) fn add_layer_norm(x: &mut [f32], residual: &[f32], norm: &LayerNorm, eps: f32) {
    let width = norm.gamma.len();
    for (row, res) in x.chunks_exact_mut(width).zip(residual.chunks_exact(width)) {
        for (v, r) in row.iter_mut().zip(res) {
            *v += r;
        }
        layer_norm_row(row, norm, eps);
    }
}

pub(crate) fn layer_norm(x: &mut [f32], norm: &LayerNorm, eps: f32) {
    for row in x.chunks_exact_mut(norm.gamma.len()) {
        layer_norm_row(row, norm, eps);
    }
}

fn layer_norm_row(row: &mut [f32], norm: &LayerNorm, eps: f32) {
    let n = row.len() as f64;
    let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    let var = row
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n;
    let inv = 1.0 / (var + f64::from(eps)).sqrt();
    for ((v, g), b) in row.iter_mut().zip(&norm.gamma).zip(&norm.beta) {
        *v = ((f64::from(*v) - mean) * inv) as f32 * g + b;
    }
}

/// Exact GELU, `x · Φ(x) = ½ · x · erfc(−x/√2)`, as BERT's `hidden_act = "gelu"` (not the tanh
/// approximation). Written with erfc so that large negative inputs keep full relative precision.
/// Computed in f64 and branch-free so the loop vectorizes; on a batch it is a few percent of the
/// forward pass.
pub(crate) fn gelu_in_place(x: &mut [f32]) {
    for v in x {
        let x = f64::from(*v);
        *v = (0.5 * x * erfc(-x * std::f64::consts::FRAC_1_SQRT_2)) as f32;
    }
}

/// Coefficients, highest degree first, of the polynomial `P(u) ≈ erfc(z) · exp(z²)` for `z ≥ 0`,
/// `u = 2t − 1`, `t = 1 / (1 + z/2)`: a degree-20 least-squares Chebyshev fit to Python's
/// `math.erfc` made by `tools/fit_erfc.py`, converted to monomials for Horner's rule. Max
/// relative error of erfc 1.2e-13 on [0, 26.5] (Abramowitz–Stegun 7.1.26, by comparison, is
/// only good to 1.5e-7 absolute, visible in f32 results).
const ERFC_POLY: [f64; 21] = [
    2.424_149_382_518_382e-8,
    -7.447_443_846_731_228e-8,
    -4.847_650_670_047_267_5e-8,
    4.784_540_084_585_756e-7,
    -5.016_156_398_799_807e-7,
    -1.154_609_896_204_450_7e-6,
    3.804_016_313_969_076e-6,
    -1.421_284_021_738_505e-6,
    -1.398_316_628_725_228_2e-5,
    2.759_185_980_104_557_7e-5,
    2.753_056_213_251_094_2e-5,
    -0.000_174_364_079_882_795_51,
    4.355_466_445_470_87e-5,
    0.000_981_977_448_753_192_1,
    -0.000_847_143_149_891_973_9,
    -0.006_997_461_772_857_903,
    0.003_732_892_398_423_746,
    0.078_978_581_016_976_36,
    0.241_658_194_242_614_95,
    0.427_185_847_413_943_4,
    0.255_395_676_310_505_14,
];

/// Complementary error function: relative error ≤ 1.2e-13 for z ≥ 0 (for z < 0 it is
/// `2 − erfc(−z)`, absolute error ≤ 3e-15). No branches or library calls, so loops over it
/// vectorize.
pub(crate) fn erfc(z: f64) -> f64 {
    // Beyond 26.5, exp(−z²) is below f64's normal range and erfc is 0 to any precision needed.
    // Written as selects (NaN falls through both and propagates) so the compiler need not branch.
    let a = z.abs();
    let clamped = if a > 26.5 { 26.5 } else { a };
    let u = 2.0 / (1.0 + 0.5 * clamped) - 1.0;
    let mut p = 0.0;
    for c in ERFC_POLY {
        p = p * u + c;
    }
    let e = exp_neg(-clamped * clamped) * p;
    let e = if a > 26.5 { 0.0 } else { e };
    if z < 0.0 { 2.0 - e } else { e }
}

/// `1/n!` for n = 0..=13.
const INV_FACTORIALS: [f64; 14] = {
    let mut f = [1.0; 14];
    let mut n = 1;
    while n < 14 {
        f[n] = f[n - 1] / n as f64;
        n += 1;
    }
    f
};

/// `exp(y)` for `y` in [−703, 0], within 2 ulp: `y = k·ln2 + r`, `|r| ≤ ln2/2`, `exp(r)` by its
/// Taylor series to r¹³ (error below 1e-17), and `2^k` built in the exponent bits. std's `exp`
/// would be a library call per element, which blocks vectorization.
fn exp_neg(y: f64) -> f64 {
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 · 2⁵²: adding it rounds to an integer
    const LN2_HI: f64 = 0.693_147_180_369_123_8; // ln 2 split so k·LN2_HI is exact
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let shifted = y * std::f64::consts::LOG2_E + SHIFT;
    let k = shifted - SHIFT;
    let r = (y - k * LN2_HI) - k * LN2_LO;
    let mut p = INV_FACTORIALS[13];
    for &c in INV_FACTORIALS[..13].iter().rev() {
        p = p * r + c;
    }
    // The low mantissa bits of `shifted` hold k (two's complement, offset by 2⁵¹, a multiple
    // of 2¹²): adding the bias and shifting leaves the biased exponent k + 1023 ∈ [1, 1023].
    let scale = f64::from_bits(shifted.to_bits().wrapping_add(1023) << 52);
    p * scale
}

/// Error function. Near 0 it uses the Maclaurin series so that `erf(z)/z` keeps full relative
/// precision, elsewhere `1 − erfc`.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn erf(z: f64) -> f64 {
    if z.abs() < 0.5 {
        // erf z = 2/√π · Σ (−1)ⁿ z^(2n+1) / (n! (2n+1)); 12 terms reach 1e-17 at |z| = 0.5.
        let z2 = z * z;
        let (mut term, mut sum) = (z, z);
        for n in 1..12 {
            term *= -z2 / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * std::f64::consts::FRAC_2_SQRT_PI
    } else if z > 0.0 {
        1.0 - erfc(z)
    } else {
        erfc(-z) - 1.0
    }
}

/// Softmax of one row in place, max-subtracted.
fn softmax_row(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

/// Multi-head self-attention for one sequence occupying `len` consecutive token rows.
///
/// `qkv` holds the sequence's rows of `[Q | K | V]` (width `3·hidden`); the context is written
/// into `ctx` (width `hidden`). Each sequence attends only to its own tokens, which is exactly
/// what padding plus an additive `-inf` mask computes, without the padded rows' work.
/// `scores` is scratch of at least `len²`.
pub(crate) fn attention(
    qkv: &[f32],
    ctx: &mut [f32],
    scores: &mut [f32],
    len: usize,
    heads: usize,
    head_dim: usize,
) {
    let hidden = heads * head_dim;
    let qkv_rows = Strides::row_major(3 * hidden);
    let scores = &mut scores[..len * len];
    let scale = 1.0 / (head_dim as f32).sqrt();
    for h in 0..heads {
        let q = &qkv[h * head_dim..];
        let k = &qkv[hidden + h * head_dim..];
        let v = &qkv[2 * hidden + h * head_dim..];
        // scores = scale · Q_h · K_hᵀ
        gemm(
            (len, head_dim, len),
            scale,
            q,
            qkv_rows,
            k,
            qkv_rows.t(),
            0.0,
            scores,
            Strides::row_major(len),
        );
        for row in scores.chunks_exact_mut(len) {
            softmax_row(row);
        }
        // ctx_h = P · V_h
        gemm(
            (len, len, head_dim),
            1.0,
            scores,
            Strides::row_major(len),
            v,
            qkv_rows,
            0.0,
            &mut ctx[h * head_dim..],
            Strides::row_major(hidden),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (z, erf z, erfc z) from Python's math.erf / math.erfc.
    const TABLE: [(f64, f64, f64); 20] = [
        (0.0, 0.0, 1.0),
        (1e-08, 1.128_379_167_095_512_6e-8, 0.999_999_988_716_208_3),
        (0.001, 0.001_128_378_790_969_236_5, 0.998_871_621_209_030_7),
        (0.1, 0.112_462_916_018_284_9, 0.887_537_083_981_715_2),
        (0.4999, 0.520_411_995_161_386_6, 0.479_588_004_838_613_4),
        (0.5, 0.520_499_877_813_046_5, 0.479_500_122_186_953_5),
        (0.84, 0.765_142_711_454_994_6, 0.234_857_288_545_005_48),
        (1.0, 0.842_700_792_949_714_9, 0.157_299_207_050_285_13),
        (1.5, 0.966_105_146_475_310_8, 0.033_894_853_524_689_274),
        (2.0, 0.995_322_265_018_952_7, 0.004_677_734_981_047_265),
        (3.0, 0.999_977_909_503_001_4, 2.209_049_699_858_543_8e-5),
        (4.0, 0.999_999_984_582_742_1, 1.541_725_790_028_002e-8),
        (5.5, 0.999_999_999_999_992_7, 7.357_847_917_974_398e-15),
        (8.0, 1.0, 1.122_429_717_298_292_8e-29),
        (12.0, 1.0, 1.356_261_169_205_904_2e-64),
        (20.0, 1.0, 5.395_865_611_607_900_5e-176),
        (26.0, 1.0, 5.663_192_408_856_143e-296),
        (-0.3, -0.328_626_759_459_127_4, 1.328_626_759_459_127_4),
        (-1.7, -0.983_790_458_590_774_5, 1.983_790_458_590_774_6),
        (-4.0, -0.999_999_984_582_742_1, 1.999_999_984_582_742),
    ];

    #[test]
    fn erf_and_erfc_match_reference() {
        for (z, e, ec) in TABLE {
            let rel = |got: f64, want: f64| {
                if want == 0.0 {
                    got.abs()
                } else {
                    ((got - want) / want).abs()
                }
            };
            assert!(rel(erf(z), e) < 1e-13, "erf({z}) = {} want {e}", erf(z));
            assert!(
                rel(erfc(z), ec) < 2e-13,
                "erfc({z}) = {} want {ec}",
                erfc(z)
            );
        }
        assert_eq!(erfc(30.0), 0.0);
        assert_eq!(erfc(-30.0), 2.0);
        assert!(erfc(f64::NAN).is_nan());
    }

    #[test]
    fn exp_neg_matches_std() {
        let mut y = 0.0;
        while y > -703.0 {
            let (got, want) = (exp_neg(y), y.exp());
            assert!(
                ((got - want) / want).abs() < 5e-16,
                "exp({y}) = {got} want {want}"
            );
            y -= 0.013_7;
        }
        assert_eq!(exp_neg(0.0), 1.0);
    }

    #[test]
    fn gelu_values() {
        // x · Φ(x) from the table above: Φ(x) = erfc(−x/√2)/2.
        let mut x = [0.0f32, 1.0, -1.0, 3.0, -3.0, -10.0];
        gelu_in_place(&mut x);
        let want = [
            0.0f32,
            0.841_344_7,
            -0.158_655_3,
            2.995_950_3,
            -0.004_049_694,
            -7.619_853e-23,
        ];
        for (g, w) in x.iter().zip(want) {
            assert!((g - w).abs() <= 1e-6 * w.abs().max(1e-30), "{g} vs {w}");
        }
    }

    #[test]
    fn gemm_with_transposed_strides() {
        // a = [[1,2],[3,4]], b stored as [[5,6],[7,8]] read transposed -> a·bᵀ.
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0];
        let mut c = [0.0; 4];
        gemm(
            (2, 2, 2),
            1.0,
            &a,
            Strides::row_major(2),
            &b,
            Strides::row_major(2).t(),
            0.0,
            &mut c,
            Strides::row_major(2),
        );
        assert_eq!(c, [17.0, 23.0, 39.0, 53.0]);
    }
}
