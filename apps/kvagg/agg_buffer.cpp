#include "kvagg/agg_buffer.hpp"

#include <fmt/core.h>

namespace linerate::kvagg {

AggBuffer::AggBuffer(const mem::RegionSpec& spec, size_t slots, unsigned count, int default_socket,
                     size_t column_words, const std::string& heap_name)
    : slots_(slots),
      column_words_(column_words),
      tables_(spec, table_bytes(), count, heap_name, default_socket,
              {[bytes = table_bytes()](unsigned i) {
                   return fmt::format("aggregation table {} of {}", i,
                                      mem::format_bytes(double(bytes)));
               },
               " (more -m, hugepages, fewer --keys, or another --aggbuf)"}) {}

std::string AggBuffer::describe() const {
    return fmt::format("{} table{} x {} ({} slots), {}", count(), count() == 1 ? "" : "s",
                       mem::format_bytes(double(table_bytes())), slots_, placement());
}

}  // namespace linerate::kvagg
