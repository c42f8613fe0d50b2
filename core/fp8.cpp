#include "core/fp8.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/keyed_list.hpp"
#include "core/parse_number.hpp"

namespace sdpa {

std::optional<Fp8Descales> parse_fp8_descales(std::string_view text, std::string* why) {
    auto fail = [&](std::string msg) -> std::optional<Fp8Descales> {
        if (why) *why = std::move(msg);
        return std::nullopt;
    };
    Fp8Descales d;
    if (text == "default") return d;
    std::array<bool, kFp8TensorCount> given{};
    for (const KeyedItem& item : split_keyed_list(text)) {
        if (!item.keyed)
            return fail(fmt::format("'{}' is not TENSOR:DESCALE (TENSOR one of {})", item.whole,
                    enum_choices(kFp8TensorNames)));
        const auto t = enum_parse(kFp8TensorNames, item.key);
        if (!t)
            return fail(fmt::format("unknown fp8 tensor '{}' (accepted: {})", item.key, enum_choices(kFp8TensorNames)));
        if (given[static_cast<std::size_t>(*t)]) return fail(fmt::format("{} is given twice", *t));
        given[static_cast<std::size_t>(*t)] = true;
        const std::string_view num = item.value;
        NumberError err{};
        const auto parsed = parse_number<float>(num, &err);
        if (err == NumberError::out_of_range)
            return fail(fmt::format("descale '{}' of {} is out of the f32 range (a positive normal f32 number, from {} "
                    "to {})", num, *t, std::numeric_limits<float>::min(), std::numeric_limits<float>::max()));
        const float v = parsed.value_or(0.f);
        if (!parsed || !std::isnormal(v) || v <= 0.f)
            return fail(fmt::format("descale '{}' of {} must be a positive normal f32 number (from {} to {})", num, *t,
                    std::numeric_limits<float>::min(), std::numeric_limits<float>::max()));
        d.of(*t) = v;
    }
    return d;
}

std::string fp8_descales_name(const Fp8Descales& d) {
    const Fp8Descales def;
    std::string s;
    for (const auto& row : kFp8TensorNames)
        if (d.of(row.value) != def.of(row.value)) {
            std::string v = fmt::format("{}", d.of(row.value));  // round-trippable; "1e+20" loses its '+', the separator
            if (const auto e = v.find("e+"); e != std::string::npos) v.erase(e + 1, 1);
            s += fmt::format("{}{}:{}", s.empty() ? "" : "+", row.name, v);
        }
    return s;
}

std::string describe(const Fp8Descales& d) {
    std::string s;
    for (const auto& row : kFp8TensorNames) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", row.name, d.of(row.value));
    return s;
}

float round_scaled(DType dt, float x, float descale) {
    if (descale == 1.f) return round_to(dt, x);
    return static_cast<float>(static_cast<double>(round_to(dt, static_cast<float>(x / static_cast<double>(descale)))) *
                              descale);
}

}  // namespace sdpa
