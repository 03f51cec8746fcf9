#include "monitor/gzip_input.hpp"

#include <zlib.h>

#include <fstream>
#include <algorithm>

#include "streamsafe/error.hpp"

namespace streamsafe::monitor::detail {

bool looks_gzipped(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

namespace {
[[noreturn]] void corrupt(const std::string& source, const z_stream& stream, const char* why) {
  throw parse_error(source + ": corrupt gzip data at compressed byte offset " + std::to_string(stream.total_in) +
                        ": " + (why != nullptr ? why : "unknown zlib error"),
                    0, stream.total_in);
}

struct inflater {
  z_stream stream{};
  inflater() {
    // 16 + MAX_WBITS: expect a gzip header and trailer.
    if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw error("zlib: inflateInit2 failed");
  }
  ~inflater() { inflateEnd(&stream); }
  inflater(const inflater&) = delete;
  inflater& operator=(const inflater&) = delete;
};
}  // namespace

std::string gunzip(std::string_view compressed, const std::string& source) {
  inflater z;
  z.stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.stream.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  out.resize(std::max<std::size_t>(compressed.size() * 4, 1 << 16));
  std::size_t produced = 0;
  for (;;) {
    if (produced == out.size()) out.resize(out.size() * 2);
    z.stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.stream.avail_out = static_cast<uInt>(std::min<std::size_t>(out.size() - produced, 1u << 30));
    const uInt before = z.stream.avail_out;
    const int rc = inflate(&z.stream, Z_NO_FLUSH);
    produced += before - z.stream.avail_out;
    if (rc == Z_STREAM_END) {
      if (z.stream.avail_in == 0) break;
      inflateReset(&z.stream);  // another gzip member follows (concatenated .gz files are legal)
      continue;
    }
    if (rc == Z_BUF_ERROR && z.stream.avail_in == 0) corrupt(source, z.stream, "truncated gzip stream");
    if (rc != Z_OK && rc != Z_BUF_ERROR) corrupt(source, z.stream, z.stream.msg);
  }
  out.resize(produced);
  return out;
}

std::string load_maybe_gzipped(const std::filesystem::path& file, std::size_t spare_capacity) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) throw error(file.string() + ": cannot open for reading");
  const auto size = static_cast<std::size_t>(in.tellg());
  std::string bytes;
  bytes.reserve(size + spare_capacity);
  bytes.resize(size);
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    throw error(file.string() + ": read failed");
  }
  if (!looks_gzipped(bytes)) return bytes;
  std::string plain = gunzip(bytes, file.string());
  plain.reserve(plain.size() + spare_capacity);
  return plain;
}

}  // namespace streamsafe::monitor::detail
