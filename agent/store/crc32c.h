#pragma once

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of iSCSI, ext4 metadata and
// most storage formats: it detects all burst errors up to 32 bits, and hawk's journal records use
// it so that a torn or bit-flipped record is recognised. Table-driven (slicing-by-8, ~8 bytes per
// step) in portable C++: no hardware intrinsics and no dependency. Pure and thread-safe.

#include <cstdint>

#include "absl/strings/string_view.h"

namespace hawk::store {

// The CRC-32C of `data`: Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(absl::string_view data);

// Continues a CRC over more bytes: Crc32cExtend(Crc32c(a), b) == Crc32c(a + b).
uint32_t Crc32cExtend(uint32_t crc, absl::string_view data);

}  // namespace hawk::store
