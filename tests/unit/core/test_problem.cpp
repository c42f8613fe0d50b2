// Problem descriptor parsing and printing, validation rules, mask geometry, scale and knobs.
#include "driver/knobs.hpp"
#include "core/problem.hpp"

#include <cmath>
#include <string>

#include <gtest/gtest.h>

namespace sdpa {
namespace {

/// Parses `text`, failing the test when it does not parse.
Dims parse_ok(const std::string& text, std::string* name = nullptr) {
    std::string err;
    const auto d = parse_descriptor(text, name, &err);
    EXPECT_TRUE(d.has_value()) << text << ": " << err;
    return d.value_or(Dims{});
}

/// The error of a descriptor that must not parse ("" when it parses).
std::string parse_error(const std::string& text) {
    std::string err;
    const auto d = parse_descriptor(text, nullptr, &err);
    EXPECT_FALSE(d.has_value()) << text;
    return d ? std::string{} : err;
}

Problem with_dims(std::int64_t sq, std::int64_t skv, Mask mask) {
    Problem p;
    p.dims = parse_ok("b1hq1sq" + std::to_string(sq) + "skv" + std::to_string(skv) + "d8");
    p.mask = mask;
    return p;
}

TEST(Descriptor, RoundTripsToCanonicalForm) {
    const std::pair<const char*, const char*> cases[] = {
        {"b2hq8hkv2sq128skv256dqk64dv64", "b2hq8hkv2sq128skv256d64"},
        {"b1hq32hkv8sq4096d128n=llama3-8b", "b1hq32hkv8sq4096d128n=llama3-8b"},
        {"sq16d8", "b1hq1sq16d8"},
        {"hq4hkv4sq16skv16d8", "b1hq4sq16d8"},
        {"d32sq7b3", "b3hq1sq7d32"},
        {"b1hq2sq8dqk64dv32", "b1hq2sq8dqk64dv32"},
        {"b1hq1sq1d1n=a-b_c.1", "b1hq1sq1d1n=a-b_c.1"},
    };
    for (const auto& [in, canon] : cases) {
        std::string name;
        const Dims d = parse_ok(in, &name);
        EXPECT_EQ(descriptor(d, name), canon) << in;
        // The canonical form parses back to the same dims and name.
        std::string name2;
        EXPECT_EQ(parse_ok(canon, &name2), d) << canon;
        EXPECT_EQ(name2, name);
    }
}

TEST(Descriptor, FieldsAndDefaults) {
    std::string name;
    const Dims d = parse_ok("b2hq8hkv2sq128skv256dqk64dv32n=x", &name);
    EXPECT_EQ(d, (Dims{2, 8, 2, 128, 256, 64, 32}));
    EXPECT_EQ(name, "x");
    const Dims e = parse_ok("hq6sq10d16", &name);
    EXPECT_EQ(e.B, 1);
    EXPECT_EQ(e.H_kv, 6);   // hkv = hq
    EXPECT_EQ(e.S_kv, 10);  // skv = sq
    EXPECT_EQ(e.D_qk, 16);
    EXPECT_EQ(e.D_v, 16);   // d sets both
    EXPECT_EQ(name, "");
    const Dims f = parse_ok("sq3dqk24");
    EXPECT_EQ(f.H_q, 1);
    EXPECT_EQ(f.D_v, 24);   // dv = dqk
}

TEST(Descriptor, Errors) {
    EXPECT_NE(parse_error("b1hq8d64").find("missing sq"), std::string::npos);
    EXPECT_NE(parse_error("b1hq8sq64").find("missing d"), std::string::npos);
    EXPECT_NE(parse_error("b1hq8sq64dv64").find("missing d"), std::string::npos);
    EXPECT_NE(parse_error("b0hq8sq64d64").find("must be positive"), std::string::npos);
    EXPECT_NE(parse_error("b1hq8sq0d64").find("must be positive"), std::string::npos);
    EXPECT_NE(parse_error("b1hq8sq64d64x3").find("unknown key 'x'"), std::string::npos);
    // An unknown key is named as such whatever its number (0, none).
    EXPECT_NE(parse_error("zz0sq8d8").find("unknown key 'zz'"), std::string::npos);
    EXPECT_NE(parse_error("b1sq8d8x").find("unknown key 'x'"), std::string::npos);
    EXPECT_NE(parse_error("b1hq8sq64sq32d64").find("'sq' given twice"), std::string::npos);
    EXPECT_FALSE(parse_error("b1hq8sq64d64dqk64").empty());  // d with dqk
    EXPECT_FALSE(parse_error("b1hq8sq64dqk64d64").empty());  // dqk with d
    EXPECT_FALSE(parse_error("b1hq8sq64d64d64").empty());    // d twice
    EXPECT_FALSE(parse_error("").empty());
    EXPECT_FALSE(parse_error("b1hqsq64d64").empty());        // key without number
    EXPECT_FALSE(parse_error("b1hq8sq64d64n=").empty());     // empty name
    EXPECT_FALSE(parse_error("b99999999999999999999sq1d1").empty());  // overflow
}

TEST(Validate, Rules) {
    Problem p;
    p.dims = parse_ok("b2hq8hkv2sq16d8");
    EXPECT_EQ(validate(p), std::nullopt);

    Problem gqa = p;
    gqa.dims.H_kv = 3;
    ASSERT_TRUE(validate(gqa).has_value());
    EXPECT_NE(validate(gqa)->find("H_q = 8 must be a multiple of H_kv = 3"), std::string::npos);
    gqa.dims.H_kv = 16;  // more kv heads than query heads
    EXPECT_TRUE(validate(gqa).has_value());

    Problem mdt = p;
    mdt.mask_dt = DType::f32;
    ASSERT_TRUE(validate(mdt).has_value());
    EXPECT_NE(validate(mdt)->find("--mask-dt=f32 needs --mask=bias"), std::string::npos);
    mdt.mask = Mask::bias;
    EXPECT_EQ(validate(mdt), std::nullopt);

    Problem s = p;
    s.scale = 0.f;
    EXPECT_TRUE(validate(s).has_value());
    s.scale = INFINITY;
    EXPECT_TRUE(validate(s).has_value());
    s.scale = NAN;
    EXPECT_TRUE(validate(s).has_value());
    s.scale = 1e-30f;  // representable in bf16 (f32's exponent range), underflows in f16
    s.dt = DType::bf16;
    EXPECT_EQ(validate(s), std::nullopt);
    s.dt = DType::f16;
    EXPECT_TRUE(validate(s).has_value());
}

TEST(Mask, VisibleScoresByHand) {
    EXPECT_EQ(visible_scores(with_dims(4, 6, Mask::none)), 24);
    EXPECT_EQ(visible_scores(with_dims(4, 6, Mask::bias)), 24);
    EXPECT_EQ(visible_scores(with_dims(4, 6, Mask::causal_tl)), 1 + 2 + 3 + 4);
    EXPECT_EQ(visible_scores(with_dims(4, 6, Mask::causal_br)), 3 + 4 + 5 + 6);
    EXPECT_EQ(visible_scores(with_dims(6, 4, Mask::causal_br)), 0 + 0 + 1 + 2 + 3 + 4);
    EXPECT_EQ(visible_scores(with_dims(6, 4, Mask::causal_tl)), 1 + 2 + 3 + 4 + 4 + 4);
    EXPECT_EQ(visible_scores(with_dims(5, 5, Mask::causal_tl)), 15);
    EXPECT_EQ(visible_scores(with_dims(5, 5, Mask::causal_br)), 15);
    EXPECT_EQ(visible_scores(with_dims(1, 1, Mask::causal_br)), 1);
    // Padding: per-batch valid lengths; bottom-right alignment follows the valid lengths.
    Problem pad = with_dims(4, 6, Mask::causal_br);
    pad.dims.B = 2;
    pad.seq_len_q = {4, 2};
    pad.seq_len_kv = {6, 3};
    EXPECT_EQ(visible_scores(pad), (3 + 4 + 5 + 6) + (2 + 3));
    EXPECT_TRUE(visible(pad, 1, 1, 2));
    EXPECT_FALSE(visible(pad, 1, 2, 0));  // row 2 is padding in batch 1
    EXPECT_FALSE(visible(pad, 1, 0, 3));  // key 3 is padding in batch 1
    EXPECT_TRUE(key_never_visible(pad, 1, 4));
    EXPECT_TRUE(row_fully_masked(pad, 1, 3));
    EXPECT_EQ(validate(pad), std::nullopt);
    pad.seq_len_kv = {6, 7};
    EXPECT_NE(validate(pad)->find("padding rule: seq_len_kv[1] = 7 must be in [0, 6]"), std::string::npos);
    pad.seq_len_kv = {6};
    EXPECT_NE(validate(pad)->find("seq_len_kv has 1 entries but B = 2"), std::string::npos);
}

TEST(Mask, VisibleScoresMatchesVisible) {
    for (Mask m : {Mask::none, Mask::causal_tl, Mask::causal_br})
        for (int sq : {1, 3, 7})
            for (int skv : {1, 2, 7, 9}) {
                const Problem p = with_dims(sq, skv, m);
                std::int64_t n = 0;
                for (int i = 0; i < sq; ++i)
                    for (int j = 0; j < skv; ++j) n += visible(p, 0, i, j);
                EXPECT_EQ(visible_scores(p), n) << sq << "x" << skv << " " << static_cast<int>(m);
            }
}

TEST(Mask, FullyMaskedRowsAndUnseenKeys) {
    const Problem br = with_dims(6, 4, Mask::causal_br);  // row i sees j <= i - 2
    EXPECT_TRUE(row_fully_masked(br, 0, 0));
    EXPECT_TRUE(row_fully_masked(br, 0, 1));
    EXPECT_FALSE(row_fully_masked(br, 0, 2));
    EXPECT_FALSE(row_fully_masked(br, 0, 5));
    for (int j = 0; j < 4; ++j) EXPECT_FALSE(key_never_visible(br, 0, j));

    const Problem tl = with_dims(4, 6, Mask::causal_tl);  // keys 4 and 5 come after every query
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(row_fully_masked(tl, 0, i));
    EXPECT_FALSE(key_never_visible(tl, 0, 3));
    EXPECT_TRUE(key_never_visible(tl, 0, 4));
    EXPECT_TRUE(key_never_visible(tl, 0, 5));

    const Problem br_wide = with_dims(4, 6, Mask::causal_br);
    for (int j = 0; j < 6; ++j) EXPECT_FALSE(key_never_visible(br_wide, 0, j));
    const Problem none = with_dims(6, 4, Mask::none);
    EXPECT_FALSE(row_fully_masked(none, 0, 0));
    EXPECT_FALSE(key_never_visible(none, 0, 3));
}

// key_never_visible and row_fully_masked against their definition through visible(), over every
// mask (the causal_last_row bias and windows included) with and without padding. --random found
// the causal_last_row bias with query padding wrong: row S_q - 1 is hidden, and with padding it is
// not the last valid row.
TEST(Mask, UnseenKeysAndMaskedRowsMatchVisibleByBruteForce) {
    for (Mask m : {Mask::none, Mask::causal_tl, Mask::causal_br, Mask::bias, Mask::window})
        for (int sq : {1, 3, 5})
            for (int skv : {1, 4, 6})
                for (int pad = 0; pad < 3; ++pad) {
                    Problem p = with_dims(sq, skv, m);
                    p.dims.B = 2;
                    if (m == Mask::bias) p.mask_fill = MaskFill::causal_last_row;
                    if (m == Mask::window) p.window_left = p.window_right = 1;
                    if (pad >= 1) p.seq_len_q = {sq, (sq + 1) / 2};
                    if (pad == 2) p.seq_len_kv = {(skv + 1) / 2, skv};
                    for (int b = 0; b < 2; ++b) {
                        for (int j = 0; j < skv; ++j) {
                            bool seen = false;
                            for (int i = 0; i < sq; ++i) seen = seen || visible(p, b, i, j);
                            EXPECT_EQ(key_never_visible(p, b, j), !seen)
                                    << knobs(p) << " " << descriptor(p.dims) << " b " << b << " key " << j;
                        }
                        for (int i = 0; i < sq; ++i) {
                            bool any = false;
                            for (int j = 0; j < skv; ++j) any = any || visible(p, b, i, j);
                            EXPECT_EQ(row_fully_masked(p, b, i), !any)
                                    << knobs(p) << " " << descriptor(p.dims) << " b " << b << " row " << i;
                        }
                    }
                }
}

TEST(Scale, TensorValue) {
    Problem p;
    p.dims = parse_ok("b1hq1sq4d64");
    EXPECT_EQ(scale_tensor_value(p), 0.125f);
    p.scale_op = ScaleOp::div;
    EXPECT_EQ(scale_tensor_value(p), 8.f);
    p.scale_op = ScaleOp::mul;
    p.dims.D_qk = 128;
    const float exact = static_cast<float>(1.0 / std::sqrt(128.0));
    EXPECT_EQ(scale_tensor_value(p), exact);
    p.dt = DType::bf16;
    // 1/sqrt(128) = 0.0883883...; bf16 keeps 8 significant bits: 181/128 * 2^-4.
    EXPECT_EQ(scale_tensor_value(p), 0.08837890625f);
    EXPECT_NE(scale_tensor_value(p), exact);
    p.scale = 0.3f;
    EXPECT_EQ(scale_tensor_value(p), round_to(DType::bf16, 0.3f));
    EXPECT_NE(scale_tensor_value(p), 0.3f);
}

TEST(Knobs, OnlyNonDefaults) {
    Problem p;
    p.dims = parse_ok("b1hq1sq4d8");
    EXPECT_EQ(knobs(p), "");
    p.dir = Dir::bwd;
    p.dt = DType::bf16;
    p.mask = Mask::causal_br;
    EXPECT_EQ(knobs(p), "--dir=bwd --dt=bf16 --mask=causal_br");
    p.bias_shape = BiasShape::bh;  // ignored without a bias
    EXPECT_EQ(knobs(p), "--dir=bwd --dt=bf16 --mask=causal_br");
    p.mask = Mask::bias;
    p.mask_dt = DType::f32;
    p.scale = 0.25f;
    p.scale_op = ScaleOp::div;
    p.fill = Fill::normal;
    p.seed = 7;
    EXPECT_EQ(knobs(p),
        "--dir=bwd --dt=bf16 --mask=bias --mask-shape=BxHqxSqxSkv --mask-dt=f32 --scale=0.25 "
        "--scale-op=div --fill=normal --seed=7");
}

// Sliding window: FlashAttention's window_size=(left, right), bottom-right aligned: key j is
// visible to query i when i + S_kv - S_q - left <= j <= i + S_kv - S_q + right.
TEST(Window, VisibleByHand) {
    Problem p = with_dims(4, 6, Mask::window);
    p.window_left = 1;
    p.window_right = 0;
    // shift = 2: row 0 sees keys 1..2, row 3 sees keys 4..5.
    EXPECT_FALSE(visible(p, 0, 0, 0));
    EXPECT_TRUE(visible(p, 0, 0, 1));
    EXPECT_TRUE(visible(p, 0, 0, 2));
    EXPECT_FALSE(visible(p, 0, 0, 3));
    EXPECT_TRUE(visible(p, 0, 3, 5));
    EXPECT_FALSE(visible(p, 0, 3, 3));
    EXPECT_EQ(visible_scores(p), 8);
    EXPECT_TRUE(key_never_visible(p, 0, 0));  // key 0 is left of every window
    EXPECT_FALSE(key_never_visible(p, 0, 1));
    EXPECT_EQ(visible_keys(p, 0, 1), (std::pair<std::int64_t, std::int64_t>{2, 4}));
    // window:0,0 with S_q > S_kv: rows before the diagonal see nothing.
    Problem d = with_dims(5, 3, Mask::window);
    EXPECT_TRUE(row_fully_masked(d, 0, 1));
    EXPECT_FALSE(row_fully_masked(d, 0, 2));
    EXPECT_EQ(visible_scores(d), 3);
}

// visible_keys, visible_scores, row_fully_masked and key_never_visible agree with brute force over
// visible() for every mask, window bounds and padding.
TEST(Window, DerivedFunctionsMatchBruteForce) {
    for (Mask m : {Mask::none, Mask::causal_tl, Mask::causal_br, Mask::window})
        for (int sq : {1, 3, 7})
            for (int skv : {1, 4, 9})
                for (int l : {0, 2, 20})
                    for (int r : {0, 1, 5})
                        for (int pad = 0; pad < 2; ++pad) {
                            Problem p = with_dims(sq, skv, m);
                            if (m == Mask::window) {
                                p.window_left = l;
                                p.window_right = r;
                            } else if (l != 0 || r != 0) continue;
                            if (pad) {
                                p.dims.B = 2;
                                p.seq_len_q = {sq, (sq + 1) / 2};
                                p.seq_len_kv = {skv / 2, skv};
                            }
                            ASSERT_EQ(validate(p), std::nullopt);
                            std::int64_t n = 0;
                            for (int b = 0; b < p.dims.B; ++b) {
                                for (int i = 0; i < sq; ++i) {
                                    std::int64_t first = -1, count = 0;
                                    for (int j = 0; j < skv; ++j)
                                        if (visible(p, b, i, j)) {
                                            if (first < 0) first = j;
                                            ++count;
                                        }
                                    const auto [lo, hi] = visible_keys(p, b, i);
                                    EXPECT_EQ(hi - lo, count) << knobs(p) << " b" << b << " i" << i;
                                    if (count > 0) { EXPECT_EQ(lo, first); }
                                    EXPECT_EQ(row_fully_masked(p, b, i), count == 0);
                                    n += count;
                                }
                                for (int j = 0; j < skv; ++j) {
                                    bool seen = false;
                                    for (int i = 0; i < sq; ++i) seen = seen || visible(p, b, i, j);
                                    EXPECT_EQ(key_never_visible(p, b, j), !seen) << knobs(p) << " b" << b << " j" << j;
                                }
                            }
                            EXPECT_EQ(visible_scores(p), n) << knobs(p);
                        }
}

TEST(Window, ParseAndRules) {
    EXPECT_EQ(parse_window_mask("window:128,0"), (std::pair<std::int64_t, std::int64_t>{128, 0}));
    EXPECT_EQ(parse_window_mask("window:0,7"), (std::pair<std::int64_t, std::int64_t>{0, 7}));
    EXPECT_EQ(parse_window_mask("window:-1,0"), (std::pair<std::int64_t, std::int64_t>{kWindowUnbounded, 0}));
    EXPECT_EQ(parse_window_mask("window:-2,0"), std::nullopt);
    EXPECT_EQ(parse_window_mask("window:3"), std::nullopt);
    EXPECT_EQ(parse_window_mask("window:3,x"), std::nullopt);
    EXPECT_EQ(parse_window_mask("causal_tl"), std::nullopt);
    Problem p = with_dims(4, 4, Mask::causal_tl);
    p.window_left = 2;
    EXPECT_NE(validate(p)->find("need --mask=window:L,R"), std::string::npos);
    p.mask = Mask::window;
    EXPECT_EQ(validate(p), std::nullopt);
    EXPECT_EQ(knobs(p), "--mask=window:2,0");
    p.seq_len_q = {3};
    p.layout = Layout::bshd;
    p.deterministic = true;
    EXPECT_EQ(knobs(p), "--mask=window:2,0 --seq-len-q=3 --layout=bshd --deterministic=true");
}

// --mask-form=implicit builds only causal_tl / causal_br inside the graph, without padding;
// --dropout-property=tensor needs --dropout. Both knobs appear in the repro.
TEST(Validate, ImplicitMaskAndDropoutPropertyRules) {
    Problem p = with_dims(8, 12, Mask::causal_tl);
    p.implicit_mask = true;
    EXPECT_EQ(validate(p), std::nullopt);
    EXPECT_EQ(knobs(p), "--mask=causal_tl --mask-form=implicit");
    p.mask = Mask::causal_br;
    EXPECT_EQ(validate(p), std::nullopt);
    p.mask = Mask::none;
    EXPECT_EQ(validate(p), "mask rule: --mask-form=implicit needs --mask=causal_tl or causal_br (got --mask=none)");
    p.mask = Mask::bias;
    EXPECT_EQ(validate(p), "mask rule: --mask-form=implicit needs --mask=causal_tl or causal_br (got --mask=bias)");
    p.mask = Mask::window;
    p.window_left = 2;
    ASSERT_TRUE(validate(p).has_value());
    EXPECT_EQ(validate(p)->rfind("mask rule: --mask-form=implicit needs --mask=causal_tl or causal_br (got --mask=window",
                      0), 0u) << *validate(p);
    p.implicit_mask = false;  // the same masks as tensors are fine
    EXPECT_EQ(validate(p), std::nullopt);

    // Padding needs the mask tensor.
    Problem pad = with_dims(8, 12, Mask::causal_br);
    pad.implicit_mask = true;
    pad.seq_len_kv = {5};
    ASSERT_TRUE(validate(pad).has_value());
    EXPECT_EQ(*validate(pad), "mask rule: --mask-form=implicit builds only the causal mask in the graph; padding "
                              "(--seq-len-q/kv) needs the mask tensor (--mask-form=tensor)");
    pad.seq_len_kv.clear();
    pad.seq_len_q = {3};
    ASSERT_TRUE(validate(pad).has_value());
    EXPECT_EQ(validate(pad)->rfind("mask rule:", 0), 0u) << *validate(pad);
    pad.implicit_mask = false;
    EXPECT_EQ(validate(pad), std::nullopt);

    // Dropout scalars as device tensors.
    Problem d = with_dims(8, 8, Mask::none);
    d.dropout_device_scalars = true;
    EXPECT_EQ(validate(d), "dropout rule: --dropout-property=tensor needs --dropout");
    d.dropout = Dropout{};
    EXPECT_EQ(validate(d), std::nullopt);
    EXPECT_NE(knobs(d).find("--dropout-property=tensor"), std::string::npos) << knobs(d);
    d.dropout_device_scalars = false;
    EXPECT_EQ(knobs(d).find("--dropout-property"), std::string::npos) << knobs(d);
}

}  // namespace
}  // namespace sdpa
