// What a backend documents for the values the math leaves open (fully masked rows, padded rows):
// part of the vocabulary, since the checks (compare/) judge outputs by it and the backends
// (backends/backend.hpp Backend::conventions) declare it.
#pragma once

#include <cmath>

namespace sdpa {

/// Conventions a backend documents for values the math leaves open.
struct Conventions {
    /// stats value written for a fully masked query row (no visible key). FlashAttention and
    /// the reference write +inf (so exp(s - stats) = 0 in the backward); oneDNN's SoftMax
    /// with mode inf_as_zero writes 0 (its backward gets exp(-inf - 0) = 0 the same way).
    float masked_row_stats = INFINITY;
    /// With padding, the O and stats rows past a batch's valid query length are left unspecified
    /// (not written, or written with anything): cuDNN's padded mode (NVIDIA's own tests overwrite
    /// those rows of the GPU output before comparing). The checks then skip them
    /// (compare/compare.hpp unchecked), the guarded buffers do not count them as unwritten, and
    /// fwd_bwd zeroes them before its backward.
    bool padded_rows_unspecified = false;
    /// With padding, the gradient rows past the valid lengths (dQ rows i >= seq_len_q, dK and dV
    /// rows j >= seq_len_kv) are left unspecified too; otherwise (the default) they are structural
    /// zeros that must be written (compare/compare.hpp structural). The checks then skip them and
    /// the guarded buffers do not count them as unwritten; -v's "observed:" line still says what
    /// the kernel left there (compare/compare.hpp observed_masked_rows).
    bool padded_grad_rows_unspecified = false;
    /// The checking reference rounds P and the scaled dS to the io type, as oneDNN's documented
    /// training graphs do (ref/sdpa_ref.hpp RefOptions::emulate_rounding); false: it keeps them in
    /// f32, as PyTorch's CPU kernels and most GPU kernels do. The bound covers either rounding
    /// (compare/README.md, "Intermediates"), so no correct kernel's verdict depends on it; the
    /// self-consistency test checks that with the two test backends that differ in it.
    bool reference_rounds_intermediates = true;
    /// The kernel computes its scores (QK^T, the scale, the softmax) in the io type, not in f32
    /// (PyTorch's math on 16-bit inputs): the magnitudes take the scores' rounding at the io type's
    /// roundoff (ref/sdpa_ref.hpp RefOptions::io_scores; compare/README.md, "Intermediates").
    bool scores_in_io_type = false;
};

}  // namespace sdpa
