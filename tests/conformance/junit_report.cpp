// SPDX-License-Identifier: Apache-2.0
// tests/conformance/junit_report.cpp — per-(case, device) JUnit: one child process per device,
// their Catch junit files merged (see junit_report.hpp). Catch's junit output is a fixed,
// line-oriented layout (one <testsuite>, <testcase .../> or <testcase ...> ... </testcase>), read
// here by its tags; attribute values are unescaped before they are compared.
#include "conformance/junit_report.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "support/catch.hpp"

#if !defined(_WIN32)
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace vgpu_test {
namespace {

std::mutex g_skip_mutex;
std::vector<std::tuple<std::string, std::string, std::string>> g_skips;  // case, device, why

/// The value of attribute name in the XML tag text, unescaped ("" when absent).
std::string attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const auto at = tag.find(key);
  if (at == std::string::npos) return "";
  const auto begin = at + key.size(), end = tag.find('"', begin);
  std::string raw = tag.substr(begin, end - begin), out;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out += raw[i];
      continue;
    }
    const auto semi = raw.find(';', i);
    const std::string entity = raw.substr(i + 1, semi - i - 1);
    if (entity == "lt")
      out += '<';
    else if (entity == "gt")
      out += '>';
    else if (entity == "amp")
      out += '&';
    else if (entity == "quot")
      out += '"';
    else if (entity == "apos")
      out += '\'';
    else if (!entity.empty() && entity[0] == '#')
      out += static_cast<char>(
          std::strtol(entity.c_str() + (entity[1] == 'x' ? 2 : 1), nullptr, entity[1] == 'x' ? 16 : 10));
    else
      out += "&" + entity + ";";
    i = semi;
  }
  return out;
}

/// text escaped for an XML attribute.
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// tag with attribute name set to value (replaced, or added before the closing bracket).
std::string set_attribute(std::string tag, const std::string& name, const std::string& value) {
  const std::string key = " " + name + "=\"";
  const auto at = tag.find(key);
  if (at != std::string::npos) {
    const auto end = tag.find('"', at + key.size());
    return tag.replace(at, end + 1 - at, key + escape(value) + "\"");
  }
  const auto close = tag.rfind(tag.size() >= 2 && tag[tag.size() - 2] == '/' ? "/>" : ">");
  return tag.insert(close, key + escape(value) + "\"");
}

/// This machine's name, as JUnit's hostname.
std::string host_name() {
#if defined(_WIN32)
  if (const char* n = std::getenv("COMPUTERNAME")) return n;
  return "unknown";
#else
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : "unknown";
#endif
}

/// text quoted for the shell std::system runs.
std::string quoted(const std::string& text) {
#if defined(_WIN32)
  return "\"" + text + "\"";
#else
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
#endif
}

/// The exit code of a std::system result.
int exit_code(int status) {
#if defined(_WIN32)
  return status;
#else
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;  // killed: a failure
#endif
}

/// Reads part's "case\tdevice\twhy" skip lines: case → why (the part holds one device).
std::map<std::string, std::string> read_skips(const std::string& part) {
  std::map<std::string, std::string> out;
  std::ifstream in(part + ".skips");
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find('\t'), b = line.find('\t', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    out[line.substr(0, a)] = line.substr(b + 1);
  }
  return out;
}

/// One child's report as a <testsuite> of device id: names, hostname and skips set. Returns
/// "" when the part is missing or has no testsuite (the child died before writing it).
std::string suite_of(const std::string& part, const std::string& id, const std::string& host, std::size_t* cases,
                     std::size_t* skipped) {
  std::ifstream in(part);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string xml = ss.str();
  const auto begin = xml.find("<testsuite ");
  const auto end = xml.find("</testsuite>");
  if (begin == std::string::npos || end == std::string::npos) return "";
  const std::map<std::string, std::string> skips = read_skips(part);
  const std::string classname = "vgpu-conformance." + id;
  std::string out;
  std::size_t n_skipped = 0, n_cases = 0;
  std::set<std::string> reported;  // the cases Catch wrote (it writes none for a case without assertions)
  std::istringstream lines(xml.substr(begin, end - begin));
  for (std::string line; std::getline(lines, line);) {
    const auto lt = line.find('<');
    if (lt == std::string::npos) continue;  // blank lines between Catch's elements
    std::string indent = line.substr(0, lt), tag = line.substr(lt);
    if (tag.rfind("<testsuite ", 0) == 0) {
      tag = set_attribute(set_attribute(tag, "name", classname), "hostname", host);
    } else if (tag.rfind("<testcase ", 0) == 0) {
      ++n_cases;
      tag = set_attribute(tag, "classname", classname);
      reported.insert(attribute(tag, "name"));
      const auto skip = skips.find(attribute(tag, "name"));
      if (skip != skips.end()) {
        ++n_skipped;
        const std::string marker = indent + "  <skipped message=\"" + escape(skip->second) + "\"/>";
        if (tag.size() >= 2 && tag.compare(tag.size() - 2, 2, "/>") == 0)
          tag = tag.substr(0, tag.size() - 2) + ">\n" + marker + "\n" + indent + "</testcase>";
        else
          tag += "\n" + marker;
      }
    }
    out += indent + tag + "\n";
  }
  // A case that only skipped this device made no assertion, so Catch wrote nothing for it: its
  // <testcase> goes after the others, before <system-out> (the schema's order).
  std::string added;
  for (const auto& [name, why] : skips) {
    if (reported.count(name)) continue;
    ++n_cases;
    ++n_skipped;
    added += "    <testcase classname=\"" + escape(classname) + "\" name=\"" + escape(name) +
             "\" time=\"0\">\n      <skipped message=\"" + escape(why) + "\"/>\n    </testcase>\n";
  }
  const auto system_out = out.find("<system-out");
  const auto insert_at = system_out == std::string::npos ? out.size() : out.rfind('\n', system_out) + 1;
  out.insert(insert_at, added);
  // The counts on the suite, for readers that total them.
  const auto open_end = out.find('>');
  std::string open = out.substr(0, open_end + 1);
  open = set_attribute(set_attribute(open, "tests", std::to_string(n_cases)), "skipped", std::to_string(n_skipped));
  out = open + out.substr(open_end + 1);
  *cases += n_cases;
  *skipped += n_skipped;
  return out + "  </testsuite>\n";
}

}  // namespace

void skip_on(const vgpu::Device& device, const std::string& why) {
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  std::lock_guard lock(g_skip_mutex);
  g_skips.emplace_back(name, device.info().id(), why);
}

void write_skips(const std::string& part) {
  std::lock_guard lock(g_skip_mutex);
  std::ofstream out(part + ".skips", std::ios::trunc);
  for (const auto& [name, id, why] : g_skips) out << name << '\t' << id << '\t' << why << '\n';
}

int run_per_device_junit(const std::string& program, const std::vector<std::string>& device_ids,
                         const std::vector<std::string>& catch_args, const std::string& junit) {
  const std::string host = host_name();
  bool failed = false, bad = false;
  std::string suites;
  std::size_t cases = 0, skipped = 0;
  for (const std::string& id : device_ids) {
    const std::string part = junit + "." + id.substr(0, id.find(':')) + "-" + id.substr(id.find(':') + 1) + ".part";
    std::string command = quoted(program) + " --device " + quoted(id) + " --junit-part " + quoted(part);
    for (std::size_t i = 1; i < catch_args.size(); ++i) command += " " + quoted(catch_args[i]);
    std::printf("conformance: %s in a process of its own (JUnit part %s)\n", id.c_str(), part.c_str());
    std::fflush(stdout);
    std::remove(part.c_str());
    const int code = exit_code(std::system(command.c_str()));
    if (code == 2) bad = true;
    if (code != 0) failed = true;
    const std::string suite = suite_of(part, id, host, &cases, &skipped);
    if (suite.empty()) {
      std::fprintf(stderr, "conformance: %s wrote no JUnit report (exit %d); it counts as failed\n", id.c_str(), code);
      failed = true;
      suites += "  <testsuite name=\"vgpu-conformance." + escape(id) + "\" hostname=\"" + escape(host) +
                "\" tests=\"1\" failures=\"0\" errors=\"1\">\n    <testcase classname=\"vgpu-conformance." +
                escape(id) + "\" name=\"the run\"><error message=\"the process exited " + std::to_string(code) +
                " without a report\"/></testcase>\n  </testsuite>\n";
    } else {
      suites += "  " + suite;
    }
    std::remove(part.c_str());
    std::remove((part + ".skips").c_str());
  }
  std::ofstream out(junit, std::ios::trunc);
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n" << suites << "</testsuites>\n";
  out.close();
  std::printf("conformance: JUnit report %s: %zu test cases over %zu devices, %zu skipped\n", junit.c_str(), cases,
              device_ids.size(), skipped);
  if (!out) {
    std::fprintf(stderr, "conformance: cannot write %s. Fix: give --junit a file in a writable folder\n",
                 junit.c_str());
    return 2;
  }
  return bad ? 2 : failed ? 1 : 0;
}

}  // namespace vgpu_test
