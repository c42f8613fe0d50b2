#include "core/validate.hpp"

#include "core/geometry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace sdpa {

namespace {

using i64 = std::int64_t;

/// "[2, 8, 128, 64]"
std::string shape(const TensorDesc& t) { return fmt::format("[{}]", fmt::join(t.dims, ", ")); }

/// Error when `t` is present with a rank other than `rank`.
std::optional<std::string> need_rank(const char* name, const TensorDesc& t, std::size_t rank) {
    if (t.present && t.dims.size() != rank)
        return fmt::format("rank rule: {} must have rank {}, got rank {} {}", name, rank, t.dims.size(), shape(t));
    return std::nullopt;
}

/// Error when `got` differs from `want` (both present).
std::optional<std::string> need_same(const char* name, const TensorDesc& got, const char* like,
        const std::vector<i64>& want) {
    if (got.present && got.dims != want)
        return fmt::format("shape rule: {} {} must be shaped like {} [{}]", name, shape(got), like,
                fmt::join(want, ", "));
    return std::nullopt;
}

}  // namespace

GraphShapes shapes_of(const Problem& p) {
    const Geometry geo = geometry(p);
    GraphShapes g;
    auto desc = [&](Role r) {
        const TensorGeom* t = geo.find(r);
        if (!t) return TensorDesc{};
        return TensorDesc{true, {t->dims.begin(), t->dims.end()}, fmt::format("{}", t->type)};
    };
    g.Q = desc(Role::Q);
    g.K = desc(Role::K);
    g.V = desc(Role::V);
    if (p.dir == Dir::bwd) {  // O and dO are graph inputs of the backward only
        g.O = desc(Role::O);
        g.dO = desc(Role::dO);
    }
    g.stats = desc(Role::stats);
    g.bias = desc(Role::bias);
    g.seq_len_q = desc(Role::seq_len_q);
    g.seq_len_kv = desc(Role::seq_len_kv);
    return g;
}

std::optional<std::string> validate_shapes(const GraphShapes& g) {
    const std::pair<const char*, const TensorDesc*> all[] = {{"Q", &g.Q}, {"K", &g.K}, {"V", &g.V}, {"O", &g.O},
        {"dO", &g.dO}, {"stats", &g.stats}, {"bias", &g.bias}, {"dropout mask", &g.dropout_mask},
        {"seq_len_q", &g.seq_len_q}, {"seq_len_kv", &g.seq_len_kv}};
    for (const auto& [name, t] : all)
        for (std::size_t k = 0; t->present && k < t->dims.size(); ++k)
            if (t->dims[k] <= 0)
                return fmt::format("dimension rule: {} {} has dimension {} = {}; every dimension must be positive",
                        name, shape(*t), k, t->dims[k]);
    if (!g.Q.present || !g.K.present || !g.V.present) return "rank rule: Q, K and V are all required";
    for (const auto& [name, t] : {std::pair{"Q", &g.Q}, {"K", &g.K}, {"V", &g.V}})
        if (auto e = need_rank(name, *t, 4)) return e;
    const i64 B = g.Q.dims[0], Hq = g.Q.dims[1], Sq = g.Q.dims[2], Dqk = g.Q.dims[3];
    const i64 Skv = g.K.dims[2], Dv = g.V.dims[3];
    if (g.K.dims[0] != B || g.V.dims[0] != B)
        return fmt::format("batch rule: Q, K and V must have the same batch: Q {} K {} V {}", B, g.K.dims[0],
                g.V.dims[0]);
    if (g.K.dims[3] != Dqk)
        return fmt::format("head-size rule: D_qk must be equal for Q and K: Q {} K {}", Dqk, g.K.dims[3]);
    if (g.V.dims[2] != Skv)
        return fmt::format("sequence rule: S_kv must be equal for K and V: K {} V {}", Skv, g.V.dims[2]);
    if (Hq % g.K.dims[1] != 0 || g.K.dims[1] > Hq)
        return fmt::format("GQA rule: H_q = {} must be a multiple of H_kv = {}", Hq, g.K.dims[1]);
    if (Hq % g.V.dims[1] != 0 || g.V.dims[1] > Hq)
        return fmt::format("GQA rule: H_q = {} must be a multiple of the V heads = {}", Hq, g.V.dims[1]);
    // The shapes the other tensors must have: those of the geometry model for the sizes Q, K and
    // V state (core/geometry.hpp), a backward problem so that every role is there.
    Problem p;
    p.dims = Dims{B, Hq, g.K.dims[1], Sq, Skv, Dqk, Dv};
    p.dir = Dir::bwd;
    p.seq_len_q = {Sq};  // any padding makes the model list seq_len_q/kv [B,1,1,1] (B from Q, not from this list)
    const Geometry model = geometry(p);
    auto model_dims = [&](Role r) {
        const auto& d = model.at(r).dims;
        return std::vector<i64>(d.begin(), d.end());
    };
    const std::vector<i64> o_shape = model_dims(Role::O), full = model_dims(Role::scores);
    if (auto e = need_same("O", g.O, "[B,H_q,S_q,D_v]", o_shape)) return e;
    if (auto e = need_same("dO", g.dO, "O", g.O.present ? g.O.dims : o_shape)) return e;
    if (auto e = need_same("stats", g.stats, "[B,H_q,S_q,1]", model_dims(Role::stats))) return e;
    if (g.bias.present) {
        const auto& bd = g.bias.dims;
        if (bd.size() < 2 || bd.size() > 4)
            return fmt::format("bias rule: the bias must have rank 2 to 4, got rank {} {}", bd.size(), shape(g.bias));
        const i64 last = bd[bd.size() - 1], second = bd[bd.size() - 2];
        if (last != Skv && last != 1)
            return fmt::format("bias rule: the bias's last dimension must be S_kv = {} or 1, got {} in {}", Skv, last,
                    shape(g.bias));
        if (second != Sq && second != 1)
            return fmt::format("bias rule: the bias's second-to-last dimension must be S_q = {} or 1, got {} in {}",
                    Sq, second, shape(g.bias));
        const i64 lead[] = {B, Hq};
        for (std::size_t k = 0; k + 2 < bd.size(); ++k) {
            const i64 want = lead[k + 4 - bd.size()];
            if (bd[k] != want && bd[k] != 1)
                return fmt::format("bias rule: bias dimension {} must be {}, got {} in {}", k,
                        want == 1 ? std::string("1") : fmt::format("{} or 1", want), bd[k], shape(g.bias));
        }
    }
    if (g.dropout_mask.present) {
        if (auto e = need_rank("the dropout mask", g.dropout_mask, 4)) return e;
        for (std::size_t k = 0; k < 4; ++k)
            if (g.dropout_mask.dims[k] != full[k] && g.dropout_mask.dims[k] != 1)
                return fmt::format("dropout rule: dropout mask {} must broadcast to [B,H_q,S_q,S_kv] = [{}]",
                        shape(g.dropout_mask), fmt::join(full, ", "));
    }
    for (const auto& [name, t] : {std::pair{"seq_len_q", &g.seq_len_q}, {"seq_len_kv", &g.seq_len_kv}}) {
        if (!t->present) continue;
        if (t->dims != model_dims(Role::seq_len_q))
            return fmt::format("padding rule: {} must be shaped [B,1,1,1] = [{}], got {}", name,
                    fmt::join(model_dims(Role::seq_len_q), ", "), shape(*t));
        if (t->dt != "s32") return fmt::format("padding rule: {} must be s32 (INT32), got {}", name, t->dt);
    }
    if (g.scale_count != 1)
        return fmt::format("scale rule: the scale must be given exactly once, got {}", g.scale_count);
    return std::nullopt;
}

}  // namespace sdpa
