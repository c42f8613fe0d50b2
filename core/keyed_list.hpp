// The "A:B[+C:D...]" lists of the per-tensor knobs (--fp8-descales, --strides, benchdnn's graph
// knobs --dt, --in-shapes, --op-kind, ...): one splitter, each knob judging its own items.
#pragma once

#include <string_view>
#include <vector>

namespace sdpa {

/// One item of a keyed list: the item as written, and the text before and after its first ':'
/// (keyed false, key and value empty, when it has no ':').
struct KeyedItem {
    std::string_view whole, key, value;
    bool keyed = false;
};

/// `text` split into its items. Grammar: LIST := ITEM ('+' ITEM)*; ITEM := KEY ':' VALUE, split at
/// its first ':' (VALUE may hold more ':'). Every '+' separates, so "" is one empty item and "a++b"
/// has an empty one between a and b. No errors of its own: an item without ':', an empty item,
/// an unknown key or a bad value is the caller's to refuse, in its own words.
inline std::vector<KeyedItem> split_keyed_list(std::string_view text) {
    std::vector<KeyedItem> out;
    std::size_t pos = 0;
    while (true) {
        const std::size_t plus = text.find('+', pos);
        KeyedItem item;
        item.whole = text.substr(pos, plus == text.npos ? text.npos : plus - pos);
        if (const std::size_t colon = item.whole.find(':'); colon != item.whole.npos) {
            item.key = item.whole.substr(0, colon);
            item.value = item.whole.substr(colon + 1);
            item.keyed = true;
        }
        out.push_back(item);
        if (plus == text.npos) return out;
        pos = plus + 1;
    }
}

}  // namespace sdpa
