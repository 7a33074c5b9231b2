// Compiled-kernel cache: in memory (thread-safe) and on disk, keyed by a hash of everything that decides
// the CUBIN. Disk entries are written to a temporary file and renamed; a damaged entry is recompiled.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/nvrtc/nvrtc.hpp"

namespace tilefuse::cache {

/// Small records beside the kernel cache (the tuner's choices), kept with its entries' discipline: written
/// to a temporary file and renamed, so a reader sees a whole record or none; read back only when the magic
/// and the checksum match. write_record returns false when the record cannot be written (its directory is
/// made if missing).
bool write_record(const std::filesystem::path& file, const std::string& payload);
/// The payload of a record written by write_record, or nothing when the file is missing or damaged.
std::optional<std::string> read_record(const std::filesystem::path& file);

/// 128-bit key as 32 hex digits.
std::string make_key(const std::string& source, const std::vector<std::string>& options, const std::string& nvrtc_version);

/// Hit and miss counters, for tests and the bench.
struct Counters {
  std::uint64_t memory_hits = 0;  ///< served from memory
  std::uint64_t disk_hits = 0;    ///< loaded from a valid disk entry
  std::uint64_t compiles = 0;     ///< compiled by NVRTC (memory and disk missed)
  std::uint64_t corrupt = 0;      ///< disk entries rejected as truncated or damaged
  std::uint64_t disk_writes = 0;  ///< entries written to disk
};

/// A compiled kernel held in memory.
struct MemoryEntry {
  std::string key;     ///< the cache key (32 hex digits)
  std::string kernel;  ///< the kernel's symbol (tilefuse_<name>)
  std::size_t cubin_bytes = 0;
};

/// A file in the disk cache.
struct DiskEntry {
  std::string key;     ///< the cache key (the file's name without .tfk)
  std::string kernel;  ///< the kernel's symbol; empty when the entry does not read back
  std::uintmax_t bytes = 0;
  std::filesystem::path path;
  bool valid = false;  ///< reads back whole (magic, this format, checksum); otherwise it is recompiled when met
};

/// The cache. One process-wide instance serves all kernels; tests make their own.
class KernelCache {
 public:
  /// A cache writing under `dir` (no disk cache when empty). A directory that cannot take entries (a file
  /// in the way, no permission, a full disk) gets one warning on stderr, then the cache is memory-only.
  explicit KernelCache(std::optional<std::filesystem::path> dir);
  /// The process-wide cache: TILEFUSE_CACHE_DIR, else $XDG_CACHE_HOME/tilefuse, else ~/.cache/tilefuse;
  /// TILEFUSE_DISABLE_DISK_CACHE=1 keeps it in memory only.
  static KernelCache& global();

  /// The compiled kernel for (source, kernel, options), from memory, disk or NVRTC, in that order. Threads
  /// asking for the same entry at once share one read or compile (a compile error reaches each of them).
  std::shared_ptr<const nvrtc::Compiled> get(const std::string& source, const std::string& kernel,
                                             const std::vector<std::string>& options);
  /// Current counters.
  Counters counters() const;
  /// Drops the in-memory entries (disk entries stay), so the next get() reads the disk.
  void clear_memory();
  /// The entries in memory, by kernel.
  std::vector<MemoryEntry> memory_entries() const;
  /// The entries on disk, by kernel, each read back to check it (the `kernel_cache` tool lists these).
  std::vector<DiskEntry> disk_entries();
  /// Removes the entries of `kernel` (a symbol, tilefuse_<name>; empty: every entry, and the temporary
  /// files of writers that died mid-write) from memory and disk; returns the number of files removed.
  /// Files in the directory that are not the cache's are never touched.
  std::size_t clear(const std::string& kernel = {});
  /// The disk directory, if any.
  const std::optional<std::filesystem::path>& directory() const { return dir_; }
  /// Path of the disk entry for `key`.
  std::filesystem::path entry_path(const std::string& key) const;

 private:
  std::shared_ptr<const nvrtc::Compiled> read_disk(const std::string& key, const std::vector<std::string>& options);
  std::shared_ptr<const nvrtc::Compiled> read_entry(const std::string& key, bool count_rejects);
  void write_disk(const std::string& key, const nvrtc::Compiled& compiled);
  /// The directory cannot take entries: one warning on stderr naming it and why, then memory only.
  void disk_unusable(const std::string& why);

  std::optional<std::filesystem::path> dir_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const nvrtc::Compiled>> memory_;
  // Entries a thread is reading from disk or compiling: other threads asking for them wait for its result.
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<const nvrtc::Compiled>>> in_flight_;
  std::atomic<std::uint64_t> memory_hits_{0}, disk_hits_{0}, compiles_{0}, corrupt_{0}, disk_writes_{0};
  std::atomic<bool> disk_off_{false};  // set after the first failed write (and its warning)
};

}  // namespace tilefuse::cache
