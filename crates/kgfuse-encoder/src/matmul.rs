//! Matrix products over row-major `f32` slices: OpenBLAS's `cblas_sgemm` for the
//! large ones when the build found OpenBLAS (see build.rs), gemm's kernels
//! otherwise and for the small per-head products of attention. (A question's few
//! rows against half-precision weights have kernels of their own: `half_rows.rs`.)
//!
//! Every operand is a slice plus a [`View`] (where the matrix starts, its row and
//! column strides). [`product`] checks that each view stays inside its slice and
//! that the output does not overlap itself before it hands raw pointers to a
//! kernel, so the crate's `unsafe` calls sit behind those checks.

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
mod tests {
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
