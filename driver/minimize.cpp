#include "driver/minimize.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "compare/compare.hpp"
#include "core/geometry.hpp"
#include "driver/knobs.hpp"
#include "driver/random_cases.hpp"
#include "driver/run_case.hpp"

namespace sdpa {

namespace {

using i64 = std::int64_t;

/// `text` with each number (a run of digits, '.', 'e', '+', '-' holding a digit) replaced by '#',
/// cut at 80 characters: the rule of a message whose values change as the case shrinks.
std::string rule_of(std::string_view text) {
    auto numeric = [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == 'e' ||
                                        ch == '+' || ch == '-'; };
    std::string out;
    for (std::size_t i = 0; i < text.size() && out.size() < 80;) {
        if (!numeric(text[i])) {
            out += text[i++];
            continue;
        }
        std::size_t j = i;
        while (j < text.size() && numeric(text[j])) ++j;
        const std::string_view run = text.substr(i, j - i);
        out += std::any_of(run.begin(), run.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })
                ? std::string_view("#") : run;
        i = j;
    }
    return out;
}

/// Explicit strides of `l` (dims `from`) carried to dims `to`: the same order of dimensions
/// (by stride, outermost first), each stride the extent of the dimension inside it plus the gap
/// it had there; broadcast (0) strides stay 0.
TensorLayout carry_strides(const TensorLayout& l, const std::array<i64, 4>& from, const std::array<i64, 4>& to) {
    if (l.kind != TensorLayout::Kind::strides) return l;
    std::array<int, 4> inner_first{0, 1, 2, 3};
    std::stable_sort(inner_first.begin(), inner_first.end(),
            [&](int a, int b) { return l.strides[static_cast<std::size_t>(a)] < l.strides[static_cast<std::size_t>(b)]; });
    TensorLayout out = l;
    i64 old_extent = 0, new_extent = 0;  // extents of the dims inside the current one
    bool first = true;
    for (const int d : inner_first) {
        const auto k = static_cast<std::size_t>(d);
        const i64 s = l.strides[k];
        if (s == 0) continue;
        if (first) {
            out.strides[k] = s;  // the innermost stride (1 for a dense row) stays
            first = false;
        } else {
            const i64 gap = std::max<i64>(0, s - old_extent);
            out.strides[k] = new_extent + gap;
        }
        old_extent = s * from[k];
        new_extent = out.strides[k] * to[k];
    }
    return out;
}

/// Keeps `p` consistent after its dims changed from `old`: padding lengths cut to B entries and
/// clamped to S, explicit strides carried to the new dims.
void follow_dims(Problem& p, const Problem& old) {
    for (auto* lens : {&p.seq_len_q, &p.seq_len_kv}) {
        if (lens->empty()) continue;
        const i64 full = lens == &p.seq_len_q ? p.dims.S_q : p.dims.S_kv;
        lens->resize(static_cast<std::size_t>(p.dims.B), full);
        for (auto& v : *lens) v = std::min(v, full);
    }
    const Geometry before = geometry(old), after = geometry(p);
    for (auto& [role, layout] : p.strides) {
        const TensorGeom *a = before.find(role), *b = after.find(role);
        if (a && b) layout = carry_strides(layout, a->dims, b->dims);
    }
}

/// The greedy search: the current smallest case, the runs spent, a memo of tried candidates.
class Shrinker {
public:
    /// `need_trusted`: candidates must also be cases a correct kernel PASSES (trusted()), as the
    /// original was.
    Shrinker(Case c, std::string signature, const CaseRunner& run, std::size_t max_runs, bool need_trusted)
        : cur_(std::move(c)), sig_(std::move(signature)), run_(run), max_runs_(max_runs), need_trusted_(need_trusted) {}

    /// True when `p` (canonicalized, valid) fails like the original. Invalid or seen-passing
    /// candidates cost no run.
    bool fails(Problem p) {
        canonicalize_layouts(p);
        if (validate(p)) return false;
        Case c = cur_;
        c.prb = std::move(p);
        const std::string key = repro(c);
        if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
        if (runs_ >= max_runs_) {
            hit_limit_ = true;
            return false;
        }
        ++runs_;
        const CaseResult r = run_(c);
        // Kept only where a correct kernel would PASS (no output whose reference is mostly zero),
        // when the original case was such a case: a MISTRUSTED repro proves little once fixed.
        const bool f = fails_like(r, sig_) && (!need_trusted_ || trusted(r));
        memo_.emplace(key, f);
        return f;
    }

    /// True when no output's reference is mostly zero (kZeroTrust): a correct kernel PASSES there.
    static bool trusted(const CaseResult& r) {
        return std::none_of(r.checks.begin(), r.checks.end(), [](const OutputCheck& c) { return c.zero_fraction > kZeroTrust; });
    }

    /// Keeps `p` when it differs from the current case and fails like the original.
    bool accept(Problem p) {
        canonicalize_layouts(p);
        if (p == cur_.prb || !fails(p)) return false;
        cur_.prb = std::move(p);
        ++steps_;
        return true;
    }

    /// Bisects the size read by `get` and written by `set` down to the smallest value in
    /// [lo, current) that still fails (lo itself tried first).
    template <typename Get, typename Set>
    bool shrink(Get get, Set set, i64 lo = 1) {
        const i64 x = get(cur_.prb);
        if (x <= lo) return false;
        auto with = [&](i64 v) {
            Problem p = cur_.prb;
            set(p, v);
            follow_dims(p, cur_.prb);
            canonicalize_layouts(p);
            return p;
        };
        if (accept(with(lo))) return true;
        i64 pass = lo, fail = x;  // pass: does not fail (or is invalid); fail: fails
        while (fail - pass > 1 && !hit_limit_) {
            const i64 mid = pass + (fail - pass) / 2;
            if (fails(with(mid))) fail = mid;
            else pass = mid;
        }
        return fail < x && accept(with(fail));
    }

    /// One pass over the sizes; true when any shrank.
    bool sizes() {
        bool any = false;
        any |= shrink([](const Problem& p) { return p.dims.B; }, [](Problem& p, i64 v) { p.dims.B = v; });
        any |= shrink([](const Problem& p) { return p.dims.H_kv; }, [](Problem& p, i64 v) {
            const i64 g = p.dims.H_q / p.dims.H_kv;
            p.dims.H_kv = v;
            p.dims.H_q = v * g;
        });
        any |= shrink([](const Problem& p) { return p.dims.H_q / p.dims.H_kv; },
                [](Problem& p, i64 v) { p.dims.H_q = p.dims.H_kv * v; });
        any |= shrink([](const Problem& p) { return p.dims.S_q; }, [](Problem& p, i64 v) { p.dims.S_q = v; });
        any |= shrink([](const Problem& p) { return p.dims.S_kv; }, [](Problem& p, i64 v) { p.dims.S_kv = v; });
        if (cur_.prb.dims.D_qk == cur_.prb.dims.D_v)
            any |= shrink([](const Problem& p) { return p.dims.D_qk; },
                    [](Problem& p, i64 v) { p.dims.D_qk = p.dims.D_v = v; });
        any |= shrink([](const Problem& p) { return p.dims.D_qk; }, [](Problem& p, i64 v) { p.dims.D_qk = v; });
        any |= shrink([](const Problem& p) { return p.dims.D_v; }, [](Problem& p, i64 v) { p.dims.D_v = v; });
        if (cur_.prb.mask == Mask::window) {
            // An unbounded side (-1) shrinks from the count that reaches every key.
            any |= shrink([](const Problem& p) { return window_extent(p, p.window_left); },
                    [](Problem& p, i64 v) { p.window_left = v; }, 0);
            any |= shrink([](const Problem& p) { return window_extent(p, p.window_right); },
                    [](Problem& p, i64 v) { p.window_right = v; }, 0);
        }
        return any;
    }

    /// One pass over the problem knobs toward the plainest case: each row's simpler spellings
    /// (KnobHooks::simpler; by default its default value), in table order, each candidate made
    /// valid by repair(); the first kept ends the row's turn. True when any was kept.
    bool knobs() {
        bool any = false;
        for (const Knob& k : knob_table()) {
            if (k.run_knob || k.scope == Knob::Scope::graph) continue;
            const std::vector<std::string> tries = k.hooks.simpler ? k.hooks.simpler(cur_) : std::vector{k.def()};
            for (const std::string& v : tries) {
                if (hit_limit_) return any;
                Case c = cur_;
                if (v == k.print(c) || !k.apply(v, c)) continue;
                if (accept(repair(std::move(c.prb), k.id))) {
                    any = true;
                    break;
                }
            }
        }
        return any;
    }

    /// `p` made valid after knob `changed` moved toward its default: make_valid() resets the
    /// droppable knobs (KnobHooks::drop) it must, then each reset that validity did not need is
    /// undone, so that a candidate changes no more than it has to. `p` as it was when no repair helps.
    static Problem repair(Problem p, KnobId changed) {
        if (!validate(p)) return p;
        const Problem before = p;
        if (make_valid(p, {changed})) return before;
        Case was;
        was.prb = before;
        for (const Knob& k : knob_table()) {
            if (k.hooks.drop == 0 || k.id == changed) continue;
            Case now;
            now.prb = p;
            const std::string v = k.print(was);
            if (k.print(now) == v || !k.apply(v, now)) continue;
            if (!validate(now.prb)) p = std::move(now.prb);
        }
        return p;
    }

    Minimized result() && {
        return Minimized{std::move(cur_), std::move(sig_), runs_, steps_, hit_limit_};
    }
    bool hit_limit() const { return hit_limit_; }
    bool fails_now() { return fails(cur_.prb); }
    Case& current() { return cur_; }

private:
    Case cur_;
    std::string sig_;
    const CaseRunner& run_;
    std::size_t max_runs_, runs_ = 0, steps_ = 0;
    bool need_trusted_;  ///< the original case was trusted(): candidates must be too
    bool hit_limit_ = false;
    std::map<std::string, bool> memo_;
};

}  // namespace

std::vector<std::string> failure_keys(const CaseResult& r) {
    std::vector<std::string> keys;
    if (r.status != Status::failed || r.timed_out || r.crashed) return keys;
    for (const auto& c : r.checks)
        if (!c.pass) keys.push_back(fmt::format("{}:{}", c.output, c.failure));
    if (r.dropout)
        for (const auto& f : r.dropout->failures) keys.push_back("dropout:" + rule_of(f));
    if (keys.empty()) keys.push_back("case:" + rule_of(without_step_tag(r.reason)));
    return keys;
}

std::optional<std::string> failure_signature(const CaseResult& r) {
    auto keys = failure_keys(r);
    if (keys.empty()) return std::nullopt;
    return std::move(keys.front());
}

bool fails_like(const CaseResult& r, const std::string& signature) {
    const auto keys = failure_keys(r);
    return std::find(keys.begin(), keys.end(), signature) != keys.end();
}

Minimized minimize(const Case& failed, const CaseResult& first, const CaseRunner& run, std::size_t max_runs) {
    const auto sig = failure_signature(first);
    Minimized none{failed, sig.value_or(""), 0, 0, false};
    if (!sig) return none;
    Case start = failed;
    if (start.mode == Mode::CP || start.mode == Mode::P) start.mode = Mode::C;  // only the check can fail
    const bool graph = !start.graph_file.empty();
    if (graph) {  // the descriptor case of the imported problem
        const Problem prb = start.prb;
        start = Case{};
        start.prb = prb;
        start.backend = failed.backend;
        start.mode = failed.mode == Mode::B ? Mode::B : Mode::C;
        start.where = failed.where;
    }
    Shrinker s(start, *sig, run, max_runs, Shrinker::trusted(first));
    if (graph && !s.fails_now()) {  // the graph's own structure is needed: keep the original
        Minimized kept = std::move(s).result();
        kept.smallest = failed;
        return kept;
    }
    while (!s.hit_limit()) {
        const bool a = s.sizes();
        const bool b = s.knobs();
        if (!a && !b) break;
    }
    return std::move(s).result();
}

}  // namespace sdpa
