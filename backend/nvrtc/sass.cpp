// SASS through NVIDIA's disassembler (see sass.hpp): the CUBIN goes to a private temporary file, the tool
// runs without a shell (posix_spawnp) with its output read from a pipe, and the text is parsed here.
#include "backend/nvrtc/sass.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "backend/knobs/knobs.hpp"

extern char** environ;

namespace tilefuse::nvrtc {

namespace {

// A temporary file holding `bytes`, removed when this goes out of scope.
class TempFile {
 public:
  explicit TempFile(const std::vector<char>& bytes) {
    path_ = (std::filesystem::temp_directory_path() / "tilefuse-sass-XXXXXX.cubin").string();
    const int fd = mkstemps(path_.data(), 6);
    if (fd < 0) throw std::runtime_error("tilefuse: cannot create a temporary file for the disassembler: " + std::string(std::strerror(errno)));
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) {
        ::close(fd);
        std::filesystem::remove(path_);
        throw std::runtime_error("tilefuse: cannot write the CUBIN to " + path_);
      }
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  }
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Run {
  bool started = false;  // false: the program could not be started (not found, not executable)
  int status = -1;       // exit status when it exited normally, else -1
  std::string output;    // stdout and stderr together
};

// Runs `argv` with stdout and stderr into one pipe, and waits for it.
Run run(const std::vector<std::string>& argv) {
  Run r;
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return r;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (err != 0) {
    ::close(pipe_fds[0]);
    return r;
  }
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n > 0) r.output.append(buffer, static_cast<std::size_t>(n));
    else if (n < 0 && errno == EINTR) continue;
    else break;
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // posix_spawnp may report a missing program only through the child's exit status 127.
  r.started = !(WIFEXITED(status) && WEXITSTATUS(status) == 127 && r.output.empty());
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

std::string disassemble(const std::vector<char>& cubin, bool line_info, const std::vector<std::string>& tools) {
  const TempFile file(cubin);
  std::string tried;
  for (const auto& tool : tools) {
    // A path that names no file is not run; a bare name is looked up on PATH by posix_spawnp.
    Run r;
    if (tool.find('/') == std::string::npos || std::filesystem::exists(tool)) {
      std::vector<std::string> argv{tool, "-c"};
      if (line_info) argv.push_back("-gi");
      argv.push_back(file.path());
      r = run(argv);
    }
    if (!r.started) {
      tried += (tried.empty() ? "" : ", ") + tool;
      continue;
    }
    if (r.status != 0)
      throw std::runtime_error("tilefuse: the disassembler " + tool + " failed (exit status " + std::to_string(r.status) +
                               ") on a CUBIN of " + std::to_string(cubin.size()) + " bytes:\n" + r.output);
    return r.output;
  }
  throw std::runtime_error("tilefuse: no disassembler for SASS: tried " + (tried.empty() ? std::string("nothing") : tried) +
                           "; install the CUDA toolkit's nvdisasm or set TILEFUSE_NVDISASM to its path");
}

std::string disassemble(const std::vector<char>& cubin, bool line_info) { return disassemble(cubin, line_info, knobs::nvdisasm()); }

std::vector<SassInstruction> parse_sass(const std::string& disassembly, const std::string& source_file) {
  // "        /*01a0*/              @!P1 LDG.E.EF.U16 R12, desc[UR4][R12.64] ;"
  static const std::regex instruction(R"(^\s*/\*[0-9a-fA-F]+\*/\s*(.*?)\s*$)");
  // "	//## File "/x/k.cu", line 83 inlined at "/x/k.cu", line 186": the last pair is the outermost call.
  static const std::regex location(R"re("([^"]*)", line (\d+))re");
  static const std::regex predicate(R"(^@!?U?P[0-9T]+\s+)");
  auto same_file = [&](const std::string& path) {
    return path == source_file || std::filesystem::path(path).filename() == std::filesystem::path(source_file).filename();
  };
  std::vector<SassInstruction> out;
  int line = 0;
  std::istringstream in(disassembly);
  std::string text;
  std::smatch m;
  while (std::getline(in, text)) {
    if (text.find("//##") != std::string::npos) {
      std::string file;
      int last = 0;
      for (auto it = std::sregex_iterator(text.begin(), text.end(), location); it != std::sregex_iterator(); ++it) {
        file = (*it)[1];
        last = std::stoi((*it)[2]);
      }
      line = same_file(file) ? last : 0;
      continue;
    }
    if (!std::regex_match(text, m, instruction)) continue;
    SassInstruction i;
    i.text = m[1];
    i.line = line;
    std::string op = std::regex_replace(i.text, predicate, "");
    op = op.substr(0, op.find_first_of(" .;"));
    i.opcode = op;
    out.push_back(std::move(i));
  }
  return out;
}

std::vector<std::pair<std::string, int>> opcode_counts(const std::vector<SassInstruction>& code) {
  std::map<std::string, int> count;
  for (const auto& i : code) ++count[i.opcode];
  std::vector<std::pair<std::string, int>> out(count.begin(), count.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace tilefuse::nvrtc
