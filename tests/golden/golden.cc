#include "tests/golden/golden.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

namespace ofan::golden {
namespace {

std::string g_dir;  // --golden-dir

std::optional<uint64_t> ParseNum(const std::string& s) {
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char* b = s.data() + (hex ? 2 : 0);
  const char* e = s.data() + s.size();
  uint64_t v = 0;
  const auto r = std::from_chars(b, e, v, hex ? 16 : 10);
  if (r.ec != std::errc() || r.ptr != e || b == e) return std::nullopt;
  return v;
}

// KEY=VALUE words into a map; false on a word without '=' or a repeated key.
bool ParseAttrs(const std::vector<std::string>& words, size_t from,
                std::map<std::string, std::string>& out) {
  for (size_t i = from; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq == std::string::npos || eq == 0) return false;
    if (!out.emplace(words[i].substr(0, eq), words[i].substr(eq + 1)).second) return false;
  }
  return true;
}

// One file's parse: the line being read, for the error messages.
class Parser {
 public:
  explicit Parser(std::string path) { file_.path = std::move(path); }

  Result<File> Run(std::istream& in) {
    std::string line;
    while (std::getline(in, line)) {
      ++line_no_;
      std::istringstream ws(line);
      std::vector<std::string> w;
      for (std::string word; ws >> word;) w.push_back(word);
      if (w.empty() || w[0][0] == '#') continue;
      if (auto err = Line(w)) return *err;
    }
    if (auto err = EndFrame()) return *err;
    return std::move(file_);
  }

 private:
  Error Fail(const std::string& what) const {
    return InvalidArgument(fmt::format("{}:{}: {}", file_.path, line_no_, what));
  }

  std::optional<Error> Line(const std::vector<std::string>& w) {
    if (w[0] == "switch") return SwitchLine(w);
    if (w[0] == "port") return PortLine(w);
    if (w[0] == "frame") {
      if (auto err = EndFrame()) return err;
      if (w.size() < 2) return Fail("frame without a name");
      Frame f;
      f.name = w[1];
      if (!ParseAttrs(w, 2, f.attrs)) return Fail("frame: not KEY=VALUE, or a key twice");
      if (file_.FindFrame(f.name)) return Fail("frame " + f.name + " twice");
      file_.frames.push_back(std::move(f));
      open_ = true;
      return std::nullopt;
    }
    if (w[0] == "in" || w[0] == "out" || w[0] == "ce" || w[0] == "reply") return BytesLine(w);
    return Fail("unknown line '" + w[0] + "'");
  }

  std::optional<Error> SwitchLine(const std::vector<std::string>& w) {
    std::map<std::string, std::string> a;
    if (w.size() < 2 || !ParseAttrs(w, 2, a)) return Fail("switch NAME k= levels= id= policy=");
    Switch s;
    s.name = w[1];
    const auto k = ParseNum(a["k"]), levels = ParseNum(a["levels"]), id = ParseNum(a["id"]);
    if (!k || !levels || !id || a["policy"].empty())
      return Fail("switch needs k, levels, id, policy");
    if (file_.FindSwitch(s.name)) return Fail("switch " + s.name + " twice");
    s.k = static_cast<int>(*k);
    s.levels = static_cast<int>(*levels);
    s.id = static_cast<uint32_t>(*id);
    s.policy = a["policy"];
    file_.switches.push_back(std::move(s));
    return std::nullopt;
  }

  std::optional<Error> PortLine(const std::vector<std::string>& w) {
    std::map<std::string, std::string> a;
    if (w.size() < 3 || !ParseAttrs(w, 3, a)) return Fail("port SWITCH P mac= peer=");
    Switch* s = MutableSwitch(w[1]);
    if (!s) return Fail("port of an unknown switch " + w[1]);
    const auto p = ParseNum(w[2]);
    const auto mac = ParseMac(a["mac"]), peer = ParseMac(a["peer"]);
    if (!p || !mac || !peer) return Fail("port needs a number, mac= and peer=");
    if (s->FindPort(static_cast<uint32_t>(*p))) return Fail("port given twice");
    s->ports.push_back(Port{static_cast<uint32_t>(*p), *mac, *peer});
    return std::nullopt;
  }

  std::optional<Error> BytesLine(const std::vector<std::string>& w) {
    if (!open_) return Fail(w[0] + " outside a frame");
    Frame& f = file_.frames.back();
    const bool in = w[0] == "in";
    if (w.size() != (in ? 2u : 3u)) return Fail(in ? "in HEX" : w[0] + " PORT HEX");
    auto bytes = ParseHex(w.back());
    if (!bytes) return Fail("not hex bytes");
    if (in) {
      if (!f.in.empty()) return Fail("two in lines");
      f.in = std::move(*bytes);
      return std::nullopt;
    }
    const auto port = ParseNum(w[1]);
    if (!port) return Fail("not a port number: " + w[1]);
    (w[0] == "out"  ? f.out
     : w[0] == "ce" ? f.ce
                    : f.reply)
        .push_back(Output{static_cast<uint32_t>(*port), std::move(*bytes)});
    return std::nullopt;
  }

  // The checks that need the whole frame.
  std::optional<Error> EndFrame() {
    if (!open_) return std::nullopt;
    open_ = false;
    const Frame& f = file_.frames.back();
    if (f.in.empty()) return Fail("frame " + f.name + " has no in line");
    if (!f.Has("switch")) {
      if (f.out.empty() && f.ce.empty() && f.reply.empty()) return std::nullopt;
      return Fail("frame " + f.name + ": out/ce/reply lines need a switch=");
    }
    const Switch* s = file_.FindSwitch(f.Str("switch"));
    if (!s) return Fail("frame " + f.name + ": unknown switch " + f.Str("switch"));
    if (!f.Has("in_port") || !s->FindPort(static_cast<uint32_t>(f.Num("in_port")))) {
      return Fail("frame " + f.name + ": in_port missing or not a port of " + s->name);
    }
    for (const auto* v : {&f.out, &f.ce, &f.reply}) {
      for (const Output& o : *v) {
        if (!s->FindPort(o.port)) return Fail(fmt::format("frame {}: no port {}", f.name, o.port));
      }
    }
    return std::nullopt;
  }

  Switch* MutableSwitch(const std::string& name) {
    for (Switch& s : file_.switches) {
      if (s.name == name) return &s;
    }
    return nullptr;
  }

  File file_;
  int line_no_ = 0;
  bool open_ = false;  // a frame is being read
};

}  // namespace

const Port* Switch::FindPort(uint32_t p) const {
  for (const Port& x : ports) {
    if (x.port == p) return &x;
  }
  return nullptr;
}

std::string Frame::Str(const std::string& key) const {
  const auto it = attrs.find(key);
  return it == attrs.end() ? std::string() : it->second;
}

uint64_t Frame::Num(const std::string& key, uint64_t fallback) const {
  const auto it = attrs.find(key);
  if (it == attrs.end()) return fallback;
  return ParseNum(it->second).value_or(fallback);
}

const Switch* File::FindSwitch(const std::string& name) const {
  for (const Switch& s : switches) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const Frame* File::FindFrame(const std::string& name) const {
  for (const Frame& f : frames) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::optional<pkt::MacAddr> ParseMac(const std::string& text) {
  pkt::MacAddr m;
  if (text.size() != 17) return std::nullopt;
  for (size_t i = 0; i < 6; ++i) {
    if (i > 0 && text[i * 3 - 1] != ':') return std::nullopt;
    const auto b = ParseHex(text.substr(i * 3, 2));
    if (!b) return std::nullopt;
    m.b[i] = (*b)[0];
  }
  return m;
}

std::optional<Bytes> ParseHex(const std::string& text) {
  if (text.size() % 2 != 0) return std::nullopt;
  Bytes out(text.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const char* p = text.data() + 2 * i;
    const auto r = std::from_chars(p, p + 2, out[i], 16);
    if (r.ec != std::errc() || r.ptr != p + 2) return std::nullopt;
  }
  return out;
}

Result<File> Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorCode::kIo, "cannot open " + path + ": " + std::strerror(errno));
  return Parser(path).Run(in);
}

void TakeDirArgument(int& argc, char** argv) {
  constexpr std::string_view kFlag = "--golden-dir=";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.substr(0, kFlag.size()) == kFlag) {
      g_dir = std::string(a.substr(kFlag.size()));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
}

const Result<File>& Fixture(const std::string& name) {
  static std::map<std::string, Result<File>> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return it->second;
  if (g_dir.empty()) {
    const Error e = InvalidArgument("no --golden-dir=DIR given (meson test passes tests/golden)");
    return loaded.emplace(name, e).first->second;
  }
  return loaded.emplace(name, Load(g_dir + "/" + name)).first->second;
}

}  // namespace ofan::golden
