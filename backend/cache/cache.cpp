// The kernel cache (see cache.hpp): keys hashed from everything that decides a CUBIN, the in-memory map,
// and disk entries written to a temporary file and renamed, checked by magic, version and checksum on read.
#include "backend/cache/cache.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <tuple>
#include <fstream>
#include <future>
#include <random>
#include <sstream>

#include "backend/knobs/knobs.hpp"

namespace tilefuse::cache {

namespace {

// Bump when the entry layout or anything else that changes CUBINs without changing the key changes.
constexpr std::uint32_t kFormatVersion = 2;  // 2: the kernel's symbol follows the key
constexpr char kMagic[8] = {'T', 'F', 'K', 'C', 'A', 'C', 'H', 'E'};

// FNV-1a over the bytes, from a given basis: two bases give two independent-enough 64-bit halves.
std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

struct Hasher {
  std::uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  void add(const std::string& s) {
    const std::uint64_t n = s.size();  // length prefix: "ab","c" and "a","bc" must differ
    a = fnv1a(&n, sizeof n, a);
    b = fnv1a(&n, sizeof n, b);
    a = fnv1a(s.data(), s.size(), a);
    b = fnv1a(s.data(), s.size(), b);
  }
  std::string hex() const {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
    return buf;
  }
};

std::uint64_t checksum(const std::string& bytes) { return fnv1a(bytes.data(), bytes.size(), 0xcbf29ce484222325ull); }

template <class T> void put(std::string& out, T v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put_bytes(std::string& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  out += s;
}

// Reads fields from an entry; any shortfall marks it bad instead of reading past the end.
struct Reader {
  const std::string& data;
  std::size_t pos = 0;
  bool ok = true;
  template <class T> T get() {
    T v{};
    if (pos + sizeof v > data.size()) { ok = false; return v; }
    std::memcpy(&v, data.data() + pos, sizeof v);
    pos += sizeof v;
    return v;
  }
  std::string get_bytes() {
    const auto n = get<std::uint64_t>();
    if (!ok || n > data.size() - pos) { ok = false; return {}; }
    std::string s = data.substr(pos, n);
    pos += n;
    return s;
  }
};

}  // namespace

std::string make_key(const std::string& source, const std::vector<std::string>& options, const std::string& nvrtc_version) {
  Hasher h;
  h.add("tilefuse-cache-format-" + std::to_string(kFormatVersion));
  h.add(nvrtc_version);  // a new NVRTC may emit different code for the same source
  for (const auto& o : options) h.add(o);  // options carry the architecture
  h.add(source);
  return h.hex();
}

KernelCache::KernelCache(std::optional<std::filesystem::path> dir) : dir_(std::move(dir)) {}

KernelCache& KernelCache::global() {
  static KernelCache cache(knobs::cache_dir());
  return cache;
}

std::filesystem::path KernelCache::entry_path(const std::string& key) const {
  return dir_ ? *dir_ / (key + ".tfk") : std::filesystem::path();
}

std::shared_ptr<const nvrtc::Compiled> KernelCache::get(const std::string& source, const std::string& kernel,
                                                         const std::vector<std::string>& options) {
  const std::string key = make_key(source, options, nvrtc::version());
  std::promise<std::shared_ptr<const nvrtc::Compiled>> promise;
  {
    std::unique_lock lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++memory_hits_;
      return it->second;
    }
    // Another thread is reading or compiling this entry: wait for its result (one compile per key).
    if (auto it = in_flight_.find(key); it != in_flight_.end()) {
      auto pending = it->second;
      lock.unlock();
      ++memory_hits_;
      return pending.get();  // rethrows that thread's compile error
    }
    in_flight_.emplace(key, promise.get_future().share());
  }
  std::shared_ptr<const nvrtc::Compiled> found;
  try {
    found = read_disk(key, options);
    if (found) {
      ++disk_hits_;
    } else {
      found = std::make_shared<const nvrtc::Compiled>(nvrtc::compile(source, kernel, options));
      ++compiles_;
      write_disk(key, *found);
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    promise.set_exception(std::current_exception());
    in_flight_.erase(key);
    throw;
  }
  std::lock_guard lock(mutex_);
  memory_.emplace(key, found);
  promise.set_value(found);
  in_flight_.erase(key);
  return found;
}

Counters KernelCache::counters() const {
  return Counters{memory_hits_.load(), disk_hits_.load(), compiles_.load(), corrupt_.load(), disk_writes_.load()};
}

void KernelCache::clear_memory() {
  std::lock_guard lock(mutex_);
  memory_.clear();
}

std::vector<MemoryEntry> KernelCache::memory_entries() const {
  std::lock_guard lock(mutex_);
  std::vector<MemoryEntry> out;
  for (const auto& [key, c] : memory_) out.push_back(MemoryEntry{key, c->kernel, c->cubin.size()});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return std::tie(a.kernel, a.key) < std::tie(b.kernel, b.key); });
  return out;
}

std::vector<DiskEntry> KernelCache::disk_entries() {
  std::vector<DiskEntry> out;
  if (!dir_) return out;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(*dir_, ec)) {
    if (f.path().extension() != ".tfk") continue;
    DiskEntry e;
    e.key = f.path().stem().string();
    e.bytes = f.file_size(ec);
    e.path = f.path();
    if (auto c = read_entry(e.key, false)) e.kernel = c->kernel, e.valid = true;
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return std::tie(a.kernel, a.key) < std::tie(b.kernel, b.key); });
  return out;
}

std::size_t KernelCache::clear(const std::string& kernel) {
  std::size_t removed = 0;
  {
    std::lock_guard lock(mutex_);
    for (auto it = memory_.begin(); it != memory_.end();)
      it = kernel.empty() || it->second->kernel == kernel ? memory_.erase(it) : std::next(it);
  }
  if (!dir_) return 0;
  std::error_code ec;
  std::vector<std::filesystem::path> doomed;
  for (const auto& f : std::filesystem::directory_iterator(*dir_, ec)) {
    const std::string name = f.path().filename().string();
    const bool entry = f.path().extension() == ".tfk";
    const bool temporary = name.find(".tmp.") != std::string::npos;  // left by a writer that died mid-write
    if (!entry && !temporary) continue;  // not ours: never touched
    if (!kernel.empty()) {
      if (!entry) continue;
      const auto c = read_entry(f.path().stem().string(), false);
      if (!c || c->kernel != kernel) continue;
    }
    doomed.push_back(f.path());
  }
  for (const auto& p : doomed) removed += std::filesystem::remove(p, ec) ? 1 : 0;
  return removed;
}

std::shared_ptr<const nvrtc::Compiled> KernelCache::read_disk(const std::string& key,
                                                               const std::vector<std::string>& options) {
  auto out = read_entry(key, true);
  if (!out) return nullptr;
  auto copy = std::make_shared<nvrtc::Compiled>(*out);
  copy->options = options;
  return copy;
}

std::shared_ptr<const nvrtc::Compiled> KernelCache::read_entry(const std::string& key, bool count_rejects) {
  if (!dir_) return nullptr;
  std::ifstream in(entry_path(key), std::ios::binary);
  if (!in) return nullptr;
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  // Layout: magic, version, key, payload (registers, spills, stack, log, cubin), checksum of all before it.
  auto reject = [&] {
    if (count_rejects) ++corrupt_;
    return nullptr;
  };
  if (data.size() < sizeof kMagic + sizeof(std::uint64_t) || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    return reject();
  const std::string body = data.substr(0, data.size() - sizeof(std::uint64_t));
  std::uint64_t stored = 0;
  std::memcpy(&stored, data.data() + body.size(), sizeof stored);
  if (stored != checksum(body)) return reject();
  Reader r{body, sizeof kMagic};
  auto out = std::make_shared<nvrtc::Compiled>();
  const auto version = r.get<std::uint32_t>();
  const std::string stored_key = r.get_bytes();
  out->kernel = r.get_bytes();
  out->registers = r.get<std::int32_t>();
  out->spill_stores = r.get<std::int32_t>();
  out->spill_loads = r.get<std::int32_t>();
  out->stack_bytes = r.get<std::int32_t>();
  out->log = r.get_bytes();
  const std::string cubin = r.get_bytes();
  if (!r.ok || r.pos != body.size() || version != kFormatVersion || stored_key != key || cubin.empty()) return reject();
  out->cubin.assign(cubin.begin(), cubin.end());
  return out;
}

void KernelCache::disk_unusable(const std::string& why) {
  if (disk_off_.exchange(true)) return;
  std::fprintf(stderr, "tilefuse: the kernel cache directory %s cannot take entries (%s); compiled kernels are kept in memory "
               "only (set TILEFUSE_CACHE_DIR to a writable directory, or TILEFUSE_DISABLE_DISK_CACHE=1)\n",
               dir_->string().c_str(), why.c_str());
}

void KernelCache::write_disk(const std::string& key, const nvrtc::Compiled& c) {
  if (!dir_ || disk_off_) return;
  std::error_code ec;
  std::filesystem::create_directories(*dir_, ec);
  if (ec) return disk_unusable(ec.message());
  std::string data(kMagic, sizeof kMagic);
  put<std::uint32_t>(data, kFormatVersion);
  put_bytes(data, key);
  put_bytes(data, c.kernel);
  put<std::int32_t>(data, c.registers);
  put<std::int32_t>(data, c.spill_stores);
  put<std::int32_t>(data, c.spill_loads);
  put<std::int32_t>(data, c.stack_bytes);
  put_bytes(data, c.log);
  put_bytes(data, std::string(c.cubin.begin(), c.cubin.end()));
  put<std::uint64_t>(data, checksum(data));
  // A unique temporary name per writer, then an atomic rename: readers see a whole entry or none.
  std::random_device rd;
  const auto tmp = *dir_ / (key + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd()));
  {
    // An unusable cache directory costs compile time, never correctness.
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return disk_unusable(std::strerror(errno));
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      const std::string why = std::strerror(errno);
      std::filesystem::remove(tmp, ec);
      return disk_unusable(why);
    }
  }
  std::filesystem::rename(tmp, entry_path(key), ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    return disk_unusable(why);
  }
  ++disk_writes_;
}

namespace {
constexpr char kRecordMagic[8] = {'T', 'F', 'R', 'E', 'C', '0', '0', '1'};
}  // namespace

bool write_record(const std::filesystem::path& file, const std::string& payload) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  std::string data(kRecordMagic, sizeof kRecordMagic);
  data += payload;
  put<std::uint64_t>(data, checksum(data));
  std::random_device rd;
  const auto tmp = file.parent_path() / (file.filename().string() + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

std::optional<std::string> read_record(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  if (data.size() < sizeof kRecordMagic + sizeof(std::uint64_t) || std::memcmp(data.data(), kRecordMagic, sizeof kRecordMagic) != 0)
    return std::nullopt;
  const std::string body = data.substr(0, data.size() - sizeof(std::uint64_t));
  std::uint64_t stored = 0;
  std::memcpy(&stored, data.data() + body.size(), sizeof stored);
  if (stored != checksum(body)) return std::nullopt;
  return body.substr(sizeof kRecordMagic);
}

}  // namespace tilefuse::cache
