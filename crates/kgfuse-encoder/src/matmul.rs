//! Matrix products over row-major `f32` slices: OpenBLAS's `cblas_sgemm` for the
//! large ones when the build found OpenBLAS (see build.rs), gemm's kernels
//! otherwise and for the small per-head products of attention, and a small AVX2
//! kernel of the crate's own for a few rows against half-precision weights (a
//! question's dense layers, [`add_products_with_half_rows`]).
//!
//! Every operand is a slice plus a [`View`] (where the matrix starts, its row and
//! column strides). [`product`] checks that each view stays inside its slice and
//! that the output does not overlap itself before it hands raw pointers to a
//! kernel, so the crate's `unsafe` calls sit behind those checks.

use std::ops::Range;

/// A matrix inside a slice: element `(r, c)` is `slice[offset + r * row + c * col]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View {
    pub offset: usize,
    pub row: usize,
    pub col: usize,
}

impl View {
    /// A dense row-major matrix with `columns` columns, starting at `offset`.
    pub(crate) fn rows(offset: usize, columns: usize) -> Self {
        Self {
            offset,
            row: columns,
            col: 1,
        }
    }

    /// The transpose of a dense row-major matrix with `columns` columns: what a
    /// PyTorch `Linear` weight `(out, in)` is to `x · Wᵀ`.
    pub(crate) fn transposed(offset: usize, columns: usize) -> Self {
        Self {
            offset,
            row: 1,
            col: columns,
        }
    }

    /// Index one past the last element of a `rows × cols` matrix in this view.
    fn end(&self, rows: usize, cols: usize) -> usize {
        if rows == 0 || cols == 0 {
            return self.offset;
        }
        self.offset + (rows - 1) * self.row + (cols - 1) * self.col + 1
    }
}

/// Which kernel runs a product, always on the calling thread (callers split
/// large products across threads themselves, see `forward::linear`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// A large product: OpenBLAS's kernel when the build linked it, else gemm's.
    Large,
    /// A small product (attention within one head): gemm's kernel.
    Small,
}

/// Keeps OpenBLAS (when the build linked it) from starting threads of its own;
/// called before the first product.
pub(crate) fn keep_blas_on_callers_thread() {
    #[cfg(openblas)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(blas::one_thread);
    }
}

/// `dst = lhs · rhs` (or `dst += lhs · rhs` when `accumulate`), where `lhs` is
/// `m × k`, `rhs` is `k × n` and `dst` is `m × n`, each in its view.
///
/// # Panics
///
/// When a view reaches outside its slice, or `dst`'s view has a zero stride
/// (which would write two elements to one place): both are bugs of the caller.
#[allow(clippy::too_many_arguments)]
pub(crate) fn product(
    dst: &mut [f32],
    dst_view: View,
    lhs: &[f32],
    lhs_view: View,
    rhs: &[f32],
    rhs_view: View,
    (m, k, n): (usize, usize, usize),
    accumulate: bool,
    kernel: Kernel,
) {
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        dst_view.end(m, n) <= dst.len(),
        "output view outside its slice"
    );
    assert!(
        lhs_view.end(m, k) <= lhs.len(),
        "left view outside its slice"
    );
    assert!(
        rhs_view.end(k, n) <= rhs.len(),
        "right view outside its slice"
    );
    assert!(
        (m == 1 || dst_view.row > 0) && (n == 1 || dst_view.col > 0),
        "output view writes one element twice"
    );
    if k == 0 {
        if !accumulate {
            for r in 0..m {
                for c in 0..n {
                    dst[dst_view.offset + r * dst_view.row + c * dst_view.col] = 0.0;
                }
            }
        }
        return;
    }
    #[cfg(not(openblas))]
    let _ = kernel; // no OpenBLAS: gemm runs every product
    #[cfg(openblas)]
    if kernel == Kernel::Large
        && blas::sgemm(
            dst,
            dst_view,
            lhs,
            lhs_view,
            rhs,
            rhs_view,
            (m, k, n),
            accumulate,
        )
    {
        return;
    }
    let stride = |s: usize| isize::try_from(s).expect("a stride fits in isize");
    // SAFETY: the assertions above keep every element gemm reads or writes
    // inside its slice; `dst` is borrowed mutably, so it overlaps neither input,
    // and its strides never map two elements to one place.
    #[allow(unsafe_code)]
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr().add(dst_view.offset),
            stride(dst_view.col),
            stride(dst_view.row),
            accumulate,
            lhs.as_ptr().add(lhs_view.offset),
            stride(lhs_view.col),
            stride(lhs_view.row),
            rhs.as_ptr().add(rhs_view.offset),
            stride(rhs_view.col),
            stride(rhs_view.row),
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// A dense layer's weight rounded to 16-bit floats (IEEE half precision), for
/// products of a few rows ([`add_products_with_half_rows`]); `None` when the
/// CPU cannot convert them (no AVX2, FMA and F16C).
pub(crate) fn half_precision(weight: &[f32]) -> Option<Vec<u16>> {
    #[cfg(target_arch = "x86_64")]
    if few_rows::available() {
        // SAFETY: `available` found AVX2, FMA and F16C on this CPU.
        #[allow(unsafe_code)]
        return Some(unsafe { few_rows::to_half(weight) });
    }
    let _ = weight;
    None
}

/// `out[r][o - outputs.start] += x[r] · weight[o]` for every row `r` of `x` and
/// every `o` in `outputs`, where `weight` holds `inputs` values per output (a
/// PyTorch `Linear`'s weight, `(out, in)`, from [`half_precision`]) and `out`
/// is dense, `rows × outputs.len()`.
///
/// For a few rows (a question's tokens) a product costs little arithmetic
/// against reading the weight from memory (MiniLM: 42 MB of 32-bit weights per
/// question, where `sgemm` also copies each weight into its own layout first),
/// so the weight is read in half precision, each row once for all of `x`, and
/// widened in registers; the sums are in single precision.
///
/// # Panics
///
/// When `x` is not whole rows of `inputs`, a weight row in `outputs` lies
/// outside `weight`, or `out` is not `rows × outputs.len()`.
pub(crate) fn add_products_with_half_rows(
    out: &mut [f32],
    x: &[f32],
    weight: &[u16],
    inputs: usize,
    outputs: Range<usize>,
) {
    let kernel = HalfKernel::fastest().expect("half-precision weights without F16C");
    add_products_with_half_rows_on(kernel, out, x, weight, inputs, outputs);
}

/// The kernels of [`add_products_with_half_rows`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HalfKernel {
    /// Eight lanes: AVX2, FMA and F16C.
    Avx2,
    /// Sixteen lanes and twice the rows per block: AVX-512.
    Avx512,
}

impl HalfKernel {
    /// The kernels this CPU runs, slowest first.
    pub(crate) fn available() -> Vec<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            [
                (Self::Avx2, few_rows::available()),
                (Self::Avx512, few_rows_avx512::available()),
            ]
            .into_iter()
            .filter_map(|(kernel, runs)| runs.then_some(kernel))
            .collect()
        }
        #[cfg(not(target_arch = "x86_64"))]
        Vec::new()
    }

    /// The fastest kernel this CPU runs (the feature checks are cached by the
    /// standard library).
    fn fastest() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        {
            if few_rows_avx512::available() {
                return Some(Self::Avx512);
            }
            if few_rows::available() {
                return Some(Self::Avx2);
            }
        }
        None
    }
}

/// [`add_products_with_half_rows`] on the given kernel.
///
/// # Panics
///
/// As [`add_products_with_half_rows`], and when this CPU lacks the kernel.
pub(crate) fn add_products_with_half_rows_on(
    kernel: HalfKernel,
    out: &mut [f32],
    x: &[f32],
    weight: &[u16],
    inputs: usize,
    outputs: Range<usize>,
) {
    assert!(
        inputs > 0 && x.len().is_multiple_of(inputs),
        "x is not whole rows"
    );
    assert!(
        outputs.end * inputs <= weight.len(),
        "weight rows outside the weight"
    );
    assert_eq!(out.len(), x.len() / inputs * outputs.len(), "output size");
    assert!(
        HalfKernel::available().contains(&kernel),
        "this CPU lacks the {kernel:?} kernel"
    );
    #[cfg(target_arch = "x86_64")]
    match kernel {
        // SAFETY: `available` found AVX2, FMA and F16C on this CPU.
        #[allow(unsafe_code)]
        HalfKernel::Avx2 => unsafe { few_rows::add_products(out, x, weight, inputs, outputs) },
        // SAFETY: `available` found AVX-512 (F) on this CPU.
        #[allow(unsafe_code)]
        HalfKernel::Avx512 => unsafe {
            few_rows_avx512::add_products(out, x, weight, inputs, outputs);
        },
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("half-precision weights exist only on x86-64");
}

/// [`add_products_with_half_rows`] on AVX2 with FMA and F16C: blocks of two
/// weight rows by four rows of `x`, eight lanes at a time; each pair of weight
/// rows is read once while it stays in the first-level cache for every row of
/// `x`.
#[cfg(target_arch = "x86_64")]
mod few_rows {
    use std::arch::x86_64::{
        __m128i, __m256, _MM_FROUND_TO_NEAREST_INT, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32,
        _mm_loadu_si128, _mm_movehl_ps, _mm_shuffle_ps, _mm_storeu_si128, _mm256_castps256_ps128,
        _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_extractf128_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
        _mm256_setzero_ps,
    };
    use std::ops::Range;

    const LANES: usize = 8;
    const ROWS: usize = 4;
    const OUTPUTS: usize = 2;

    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma")
            && std::is_x86_feature_detected!("f16c")
    }

    /// `weight` rounded to half precision (to nearest).
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn to_half(weight: &[f32]) -> Vec<u16> {
        let mut half = vec![0u16; weight.len()];
        let whole = weight.len() - weight.len() % LANES;
        for (from, to) in weight[..whole]
            .chunks_exact(LANES)
            .zip(half.chunks_exact_mut(LANES))
        {
            let narrowed = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(load(from));
            // SAFETY: `to` holds eight 16-bit values, the 16 bytes stored; the
            // store needs no alignment.
            #[allow(unsafe_code)]
            unsafe {
                _mm_storeu_si128(to.as_mut_ptr().cast::<__m128i>(), narrowed);
            }
        }
        for (i, &value) in weight.iter().enumerate().skip(whole) {
            let mut eight = [0.0f32; LANES];
            eight[0] = value;
            let narrowed = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(load(&eight));
            let mut out = [0u16; LANES];
            // SAFETY: as above, into a local array of eight.
            #[allow(unsafe_code)]
            unsafe {
                _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), narrowed);
            }
            half[i] = out[0];
        }
        half
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn add_products(
        out: &mut [f32],
        x: &[f32],
        weight: &[u16],
        inputs: usize,
        outputs: Range<usize>,
    ) {
        let rows = x.len() / inputs;
        let width = outputs.len();
        for output in outputs.clone().step_by(OUTPUTS) {
            let w = &weight[output * inputs..(output + OUTPUTS).min(outputs.end) * inputs];
            let column = output - outputs.start;
            for row in (0..rows).step_by(ROWS) {
                let x = &x[row * inputs..(row + ROWS).min(rows) * inputs];
                let out = &mut out[row * width..(row + ROWS).min(rows) * width];
                match (x.len() / inputs, w.len() / inputs) {
                    (4, 2) => block::<4, 2>(out, width, column, x, w, inputs),
                    (4, _) => block::<4, 1>(out, width, column, x, w, inputs),
                    (3, 2) => block::<3, 2>(out, width, column, x, w, inputs),
                    (3, _) => block::<3, 1>(out, width, column, x, w, inputs),
                    (2, 2) => block::<2, 2>(out, width, column, x, w, inputs),
                    (2, _) => block::<2, 1>(out, width, column, x, w, inputs),
                    (_, 2) => block::<1, 2>(out, width, column, x, w, inputs),
                    _ => block::<1, 1>(out, width, column, x, w, inputs),
                }
            }
        }
    }

    /// `out[i][column + j] += x[i] · w[j]` for the `R` rows of `x` and the `O`
    /// rows of `w`.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn block<const R: usize, const O: usize>(
        out: &mut [f32],
        width: usize,
        column: usize,
        x: &[f32],
        w: &[u16],
        inputs: usize,
    ) {
        assert!(x.len() >= R * inputs && w.len() >= O * inputs);
        let mut sums = [[_mm256_setzero_ps(); O]; R];
        let whole = inputs - inputs % LANES;
        let (x_at, w_at) = (x.as_ptr(), w.as_ptr());
        for k in (0..whole).step_by(LANES) {
            let mut lanes = [_mm256_setzero_ps(); O];
            for (j, lane) in lanes.iter_mut().enumerate() {
                // SAFETY: `k + LANES <= inputs` and `j < O`, so the eight
                // values read lie in weight row `j`, inside `w` (asserted
                // above); the load needs no alignment.
                #[allow(unsafe_code)]
                let narrow = unsafe { _mm_loadu_si128(w_at.add(j * inputs + k).cast::<__m128i>()) };
                *lane = _mm256_cvtph_ps(narrow);
            }
            for (i, sums) in sums.iter_mut().enumerate() {
                // SAFETY: as above, in row `i < R` of `x`.
                #[allow(unsafe_code)]
                let xs = unsafe { _mm256_loadu_ps(x_at.add(i * inputs + k)) };
                for (sum, lane) in sums.iter_mut().zip(&lanes) {
                    *sum = _mm256_fmadd_ps(xs, *lane, *sum);
                }
            }
        }
        for (i, sums) in sums.iter().enumerate() {
            for (j, sum) in sums.iter().enumerate() {
                let mut total = horizontal_sum(*sum);
                for k in whole..inputs {
                    let mut eight = [0u16; LANES];
                    eight[0] = w[j * inputs + k];
                    let widened = _mm256_castps256_ps128(load_half(&eight));
                    total = x[i * inputs + k].mul_add(_mm_cvtss_f32(widened), total);
                }
                out[i * width + column + j] += total;
            }
        }
    }

    /// Eight values from a slice of eight.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load(eight: &[f32]) -> __m256 {
        assert_eq!(eight.len(), LANES);
        // SAFETY: the slice holds the eight values read (checked above); the
        // load needs no alignment.
        #[allow(unsafe_code)]
        unsafe {
            _mm256_loadu_ps(eight.as_ptr())
        }
    }

    /// Eight half-precision values from a slice of eight, widened.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load_half(eight: &[u16]) -> __m256 {
        assert_eq!(eight.len(), LANES);
        // SAFETY: the slice holds the eight values (16 bytes) read (checked
        // above); the load needs no alignment.
        #[allow(unsafe_code)]
        let narrow = unsafe { _mm_loadu_si128(eight.as_ptr().cast::<__m128i>()) };
        _mm256_cvtph_ps(narrow)
    }

    /// The sum of a vector's eight lanes.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn horizontal_sum(v: __m256) -> f32 {
        let halves = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let pairs = _mm_add_ps(halves, _mm_movehl_ps(halves, halves));
        let one = _mm_add_ss(pairs, _mm_shuffle_ps::<0b01>(pairs, pairs));
        _mm_cvtss_f32(one)
    }
}

/// [`add_products_with_half_rows`] on AVX-512: blocks of two weight rows by up
/// to eight rows of `x`, sixteen lanes at a time. A question's 10 to 20 tokens
/// take two or three blocks of rows, so each pair of weight rows is widened two
/// or three times (four or five with the AVX2 kernel's four rows), and each
/// instruction does twice the arithmetic.
#[cfg(target_arch = "x86_64")]
mod few_rows_avx512 {
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm512_cvtph_ps, _mm512_cvtss_f32, _mm512_fmadd_ps,
        _mm512_loadu_ps, _mm512_reduce_add_ps, _mm512_setzero_ps,
    };
    use std::ops::Range;

    const LANES: usize = 16;
    const ROWS: usize = 8;
    const OUTPUTS: usize = 2;

    pub(super) fn available() -> bool {
        std::is_x86_feature_detected!("avx512f")
    }

    #[target_feature(enable = "avx512f")]
    pub(super) fn add_products(
        out: &mut [f32],
        x: &[f32],
        weight: &[u16],
        inputs: usize,
        outputs: Range<usize>,
    ) {
        let rows = x.len() / inputs;
        let width = outputs.len();
        for output in outputs.clone().step_by(OUTPUTS) {
            let w = &weight[output * inputs..(output + OUTPUTS).min(outputs.end) * inputs];
            let column = output - outputs.start;
            for row in (0..rows).step_by(ROWS) {
                let x = &x[row * inputs..(row + ROWS).min(rows) * inputs];
                let out = &mut out[row * width..(row + ROWS).min(rows) * width];
                let pair = w.len() / inputs == 2;
                // One instance of `block` per shape, so its sums stay in registers.
                macro_rules! by_rows {
                    ($($r:literal)*) => {
                        match (x.len() / inputs, pair) {
                            $(
                                ($r, true) => block::<$r, 2>(out, width, column, x, w, inputs),
                                ($r, false) => block::<$r, 1>(out, width, column, x, w, inputs),
                            )*
                            _ => unreachable!("a block has one to eight rows"),
                        }
                    };
                }
                by_rows!(1 2 3 4 5 6 7 8);
            }
        }
    }

    /// `out[i][column + j] += x[i] · w[j]` for the `R` rows of `x` and the `O`
    /// rows of `w`.
    #[target_feature(enable = "avx512f")]
    fn block<const R: usize, const O: usize>(
        out: &mut [f32],
        width: usize,
        column: usize,
        x: &[f32],
        w: &[u16],
        inputs: usize,
    ) {
        assert!(x.len() >= R * inputs && w.len() >= O * inputs);
        let mut sums = [[_mm512_setzero_ps(); O]; R];
        let whole = inputs - inputs % LANES;
        let (x_at, w_at) = (x.as_ptr(), w.as_ptr());
        for k in (0..whole).step_by(LANES) {
            let mut lanes = [_mm512_setzero_ps(); O];
            for (j, lane) in lanes.iter_mut().enumerate() {
                // SAFETY: `k + LANES <= inputs` and `j < O`, so the sixteen
                // values read lie in weight row `j`, inside `w` (asserted
                // above); the load needs no alignment.
                #[allow(unsafe_code)]
                let narrow =
                    unsafe { _mm256_loadu_si256(w_at.add(j * inputs + k).cast::<__m256i>()) };
                *lane = _mm512_cvtph_ps(narrow);
            }
            for (i, sums) in sums.iter_mut().enumerate() {
                // SAFETY: as above, in row `i < R` of `x`.
                #[allow(unsafe_code)]
                let xs = unsafe { _mm512_loadu_ps(x_at.add(i * inputs + k)) };
                for (sum, lane) in sums.iter_mut().zip(&lanes) {
                    *sum = _mm512_fmadd_ps(xs, *lane, *sum);
                }
            }
        }
        for (i, sums) in sums.iter().enumerate() {
            for (j, sum) in sums.iter().enumerate() {
                let mut total = _mm512_reduce_add_ps(*sum);
                for k in whole..inputs {
                    total = x[i * inputs + k].mul_add(widen(w[j * inputs + k]), total);
                }
                out[i * width + column + j] += total;
            }
        }
    }

    /// One half-precision value, widened by the instruction the blocks use.
    #[target_feature(enable = "avx512f")]
    fn widen(half: u16) -> f32 {
        let mut sixteen = [0u16; LANES];
        sixteen[0] = half;
        // SAFETY: a local array of sixteen 16-bit values (32 bytes) is read;
        // the load needs no alignment.
        #[allow(unsafe_code)]
        let narrow = unsafe { _mm256_loadu_si256(sixteen.as_ptr().cast::<__m256i>()) };
        _mm512_cvtss_f32(_mm512_cvtph_ps(narrow))
    }
}

/// OpenBLAS's single-precision product, for views BLAS can describe: each one
/// row-major with unit column stride, or the transpose of one.
#[cfg(openblas)]
pub(crate) mod blas {
    use super::View;
    use std::ffi::CStr;
    use std::os::raw::{c_char, c_int};

    const ROW_MAJOR: c_int = 101;
    const NO_TRANS: c_int = 111;
    const TRANS: c_int = 112;

    // SAFETY (of the declaration): the CBLAS signature of Debian's LP64 OpenBLAS.
    #[allow(unsafe_code)]
    unsafe extern "C" {
        fn cblas_sgemm(
            order: c_int,
            trans_a: c_int,
            trans_b: c_int,
            m: c_int,
            n: c_int,
            k: c_int,
            alpha: f32,
            a: *const f32,
            lda: c_int,
            b: *const f32,
            ldb: c_int,
            beta: f32,
            c: *mut f32,
            ldc: c_int,
        );
    }

    // SAFETY (of the declaration): OpenBLAS's own extensions, in every build of it.
    #[allow(unsafe_code)]
    unsafe extern "C" {
        fn openblas_set_num_threads(threads: c_int);
        fn openblas_get_corename() -> *const c_char;
        fn openblas_get_config() -> *const c_char;
    }

    /// The name of the kernels OpenBLAS chose as the process loaded it
    /// (`SkylakeX`, `Haswell`, `Prescott`, …).
    pub(crate) fn kernels() -> String {
        // SAFETY: OpenBLAS returns a static NUL-terminated string.
        #[allow(unsafe_code)]
        let name = unsafe { CStr::from_ptr(openblas_get_corename()) };
        name.to_string_lossy().into_owned()
    }

    /// Whether this OpenBLAS carries kernels for many CPUs and picks among them
    /// as it loads (`DYNAMIC_ARCH`, as Debian's does), so `OPENBLAS_CORETYPE`
    /// can name others.
    pub(crate) fn picks_kernels_at_load() -> bool {
        // SAFETY: OpenBLAS returns a static NUL-terminated string.
        #[allow(unsafe_code)]
        let config = unsafe { CStr::from_ptr(openblas_get_config()) };
        config.to_string_lossy().contains("DYNAMIC_ARCH")
    }

    /// Keeps OpenBLAS on the calling thread: the encoder splits its products
    /// across rayon's threads itself.
    pub(super) fn one_thread() {
        // SAFETY: a plain setter of OpenBLAS's thread count, called once (a
        // `Once` guards it) before any product runs.
        #[allow(unsafe_code)]
        unsafe {
            openblas_set_num_threads(1);
        }
    }

    /// How BLAS reads an `rows × cols` matrix in `view`: transposed or not, and
    /// its leading dimension; `None` when BLAS cannot describe it.
    fn layout(view: View, rows: usize, cols: usize) -> Option<(c_int, c_int)> {
        let ld = |d: usize| c_int::try_from(d).ok();
        if view.col == 1 && (view.row >= cols || rows == 1) {
            Some((NO_TRANS, ld(view.row.max(cols))?))
        } else if view.row == 1 && (view.col >= rows || cols == 1) {
            Some((TRANS, ld(view.col.max(rows))?))
        } else {
            None
        }
    }

    /// Runs the product on OpenBLAS and says so, or returns `false` (nothing
    /// written) when a view or a size does not fit BLAS. The caller has checked
    /// every view against its slice.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sgemm(
        dst: &mut [f32],
        dst_view: View,
        lhs: &[f32],
        lhs_view: View,
        rhs: &[f32],
        rhs_view: View,
        (m, k, n): (usize, usize, usize),
        accumulate: bool,
    ) -> bool {
        let size = |d: usize| c_int::try_from(d).ok();
        let (Some((NO_TRANS, ldc)), Some((ta, lda)), Some((tb, ldb)), Some(m), Some(n), Some(k)) = (
            layout(dst_view, m, n),
            layout(lhs_view, m, k),
            layout(rhs_view, k, n),
            size(m),
            size(n),
            size(k),
        ) else {
            return false;
        };
        // SAFETY: `product` checked that every view stays inside its slice, and
        // `layout` that BLAS's reading of each (transpose, leading dimension)
        // is that view; `dst` is borrowed mutably, so it overlaps neither input.
        #[allow(unsafe_code)]
        unsafe {
            cblas_sgemm(
                ROW_MAJOR,
                ta,
                tb,
                m,
                n,
                k,
                1.0,
                lhs.as_ptr().add(lhs_view.offset),
                lda,
                rhs.as_ptr().add(rhs_view.offset),
                ldb,
                if accumulate { 1.0 } else { 0.0 },
                dst.as_mut_ptr().add(dst_view.offset),
                ldc,
            );
        }
        true
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The product by the definition, for comparison.
    fn naive(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0.0; m * n];
        for r in 0..m {
            for c in 0..n {
                out[r * n + c] = (0..k).map(|i| a[r * k + i] * b[i * n + c]).sum();
            }
        }
        out
    }

    #[test]
    fn products_agree_with_the_definition_for_every_layout() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let want = naive(&a, &b, m, k, n);
        // b stored transposed (n × k), as a Linear weight is.
        let mut bt = vec![0.0; n * k];
        for i in 0..k {
            for c in 0..n {
                bt[c * k + i] = b[i * n + c];
            }
        }
        for kernel in [Kernel::Small, Kernel::Large] {
            let mut got = vec![0.0; m * n];
            product(
                &mut got,
                View::rows(0, n),
                &a,
                View::rows(0, k),
                &bt,
                View::transposed(0, k),
                (m, k, n),
                false,
                kernel,
            );
            for (x, y) in got.iter().zip(&want) {
                assert!((x - y).abs() < 1e-5, "{x} vs {y}");
            }
            // Accumulating adds to what is there.
            product(
                &mut got,
                View::rows(0, n),
                &a,
                View::rows(0, k),
                &b,
                View::rows(0, n),
                (m, k, n),
                true,
                kernel,
            );
            for (x, y) in got.iter().zip(&want) {
                assert!((x - 2.0 * y).abs() < 1e-5, "{x} vs 2 x {y}");
            }
        }
    }

    /// A half-precision value widened by the definition of the format (not by
    /// the instruction the kernels use).
    pub(crate) fn widen(half: u16) -> f32 {
        let sign = if half >> 15 == 1 { -1.0 } else { 1.0 };
        let exponent = i32::from((half >> 10) & 0x1f);
        let mantissa = f32::from(half & 0x3ff);
        sign * match exponent {
            0 => mantissa * 2f32.powi(-24),
            31 if mantissa == 0.0 => f32::INFINITY,
            31 => f32::NAN,
            _ => (1024.0 + mantissa) * 2f32.powi(exponent - 25),
        }
    }

    #[test]
    fn half_precision_weights_round_to_nearest_and_their_products_agree_with_the_definition() {
        let weight: Vec<f32> = (0..5 * 41).map(|i| (i as f32 * 0.13).sin() * 3.0).collect();
        let Some(half) = half_precision(&weight) else {
            eprintln!("this CPU lacks AVX2, FMA or F16C: no half-precision weights");
            return;
        };
        for (w, h) in weight.iter().zip(&half) {
            // Half precision keeps 11 significant bits: within 2^-11 relative.
            assert!(
                (widen(*h) - w).abs() <= w.abs() * 2f32.powi(-11) + 1e-7,
                "{w}"
            );
        }
        for (kernel, inputs) in HalfKernel::available()
            .into_iter()
            .flat_map(|k| [1, 7, 8, 9, 16, 24, 33, 41, 48].map(|inputs| (k, inputs)))
        {
            let weight: Vec<f32> = (0..5 * inputs).map(|i| (i as f32 * 0.29).cos()).collect();
            let half = half_precision(&weight).expect("converted above");
            let widened: Vec<f32> = half.iter().map(|h| widen(*h)).collect();
            for rows in 1..=17 {
                let x: Vec<f32> = (0..rows * inputs)
                    .map(|i| (i as f32 * 0.37).sin())
                    .collect();
                for outputs in [0..5, 1..4, 4..5] {
                    let width = outputs.len();
                    let mut got: Vec<f32> = (0..rows * width).map(|i| i as f32).collect();
                    add_products_with_half_rows_on(
                        kernel,
                        &mut got,
                        &x,
                        &half,
                        inputs,
                        outputs.clone(),
                    );
                    for r in 0..rows {
                        for (c, o) in outputs.clone().enumerate() {
                            let dot: f32 = (0..inputs)
                                .map(|i| x[r * inputs + i] * widened[o * inputs + i])
                                .sum();
                            let want = (r * width + c) as f32 + dot;
                            let g = got[r * width + c];
                            assert!(
                                (g - want).abs() < 1e-4,
                                "{kernel:?}, inputs {inputs}, rows {rows}, output {o}: {g} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "outside its slice")]
    fn a_view_past_its_slice_is_refused_before_gemm_runs() {
        let a = vec![1.0; 6];
        let mut out = vec![0.0; 4];
        product(
            &mut out,
            View::rows(0, 2),
            &a,
            View::rows(1, 3),
            &a,
            View::rows(0, 2),
            (2, 3, 2),
            false,
            Kernel::Small,
        );
    }
}
