#include "report/html_report.h"

#include "intake.h"
#include "labkit/protocol.h"
#include "text.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <sstream>

using nlohmann::json;

namespace grade {

std::string html_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// The kit's HTML pages' shared look: the page, headings, lab cards, badges and tables; each
// page adds its own rules after these.
const char* const page_base_style = R"(
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1f2328;
       background: #f6f8fa; margin: 0; }
main { max-width: 960px; margin: 0 auto; padding: 24px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 0; }
.sub { color: #57606a; margin: 0 0 20px; }
.lab { background: #fff; border: 1px solid #d0d7de; border-radius: 10px; padding: 20px 24px; margin: 20px 0; }
.lab-head { display: flex; justify-content: space-between; align-items: baseline; gap: 16px; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 999px; font-size: 12px; font-weight: 600;
         white-space: nowrap; }
.note { color: #57606a; }
table { border-collapse: collapse; width: 100%; }
td, th { text-align: left; padding: 6px 8px; border-top: 1px solid #eaeef2; vertical-align: top; }
th { font-size: 13px; color: #57606a; font-weight: 600; border-top: none; }
td.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
code, pre { font-family: "DejaVu Sans Mono", ui-monospace, monospace; font-size: 13px; }
.meter { height: 8px; background: #eaeef2; border-radius: 4px; overflow: hidden; }
.table-wrap { overflow-x: auto; }
@media (max-width: 600px) {
  main { padding: 10px; }
  .lab { padding: 12px; }
  .lab-head { flex-wrap: wrap; }
  td, th { padding: 4px; }
}
)";

namespace {

constexpr const char* report_style = R"(
h3 { font-size: 16px; margin: 18px 0 8px; color: #57606a; text-transform: uppercase; letter-spacing: .04em; }
.total { font-size: 22px; font-weight: 600; white-space: nowrap; }
.meter { margin: 10px 0 12px; }
.meter > div { height: 100%; background: #2da44e; }
.pass { background: #dafbe1; color: #1a7f37; }
.fail { background: #ffebe9; color: #cf222e; }
.none { background: #eaeef2; color: #57606a; }
.part { background: #fff8c5; color: #9a6700; }
td code { white-space: nowrap; font-variant-numeric: tabular-nums; }
.msg { white-space: pre-wrap; word-break: break-word; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 10px; overflow-x: auto; }
.perf { border-top: 1px solid #eaeef2; padding: 12px 0 4px; }
.perf-head { display: flex; justify-content: space-between; align-items: baseline; }
.plots { display: flex; flex-wrap: wrap; gap: 8px 32px; margin-top: 6px; }
.plot-title { font-size: 13px; color: #57606a; margin: 6px 0 2px; }
svg text { font: 12px system-ui, "DejaVu Sans", sans-serif; fill: #1f2328; }
svg text.dim { fill: #57606a; }
ul.sanitizer li { margin: 4px 0; word-break: break-word; }
svg text.label { font-weight: 600; paint-order: stroke; stroke: #fff; stroke-width: 4px; }
svg { max-width: 100%; height: auto; }
@media (max-width: 600px) {
  td code { white-space: normal; word-break: break-all; }
}
)";

// A timed case that ran earns some of its points or all: "pass" only for all of them.
std::string badge(const CaseResult& c, const CaseShare& share) {
  if (c.passed() && c.kind == "performance" && share.score < share.max)
    return share.score > 0 ? R"(<span class="badge part">partial</span>)" : R"(<span class="badge fail">no points</span>)";
  if (c.passed()) return R"(<span class="badge pass">pass</span>)";
  return c.ran() ? R"(<span class="badge fail">fail</span>)" : R"(<span class="badge none">not run</span>)";
}

// The SVG helper: horizontal bars on a common scale, each labelled and with its value.
struct Bar {
  std::string label;
  double value;
  std::string colour;
  std::string value_text;
};

// An SVG that scales down to a narrow screen instead of being cut: its size as a viewBox too.
std::string svg_open(double width, double height, const std::string& label) {
  return format("<svg width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\"", width, height, width, height) +
         " role=\"img\" aria-label=\"" + html_escaped(label) + "\">";
}

std::string svg_bars(const std::vector<Bar>& bars, double axis_max, const std::string& title) {
  // Room right of the longest bar for the longest value ("80.1% (2411 GB/s)"), at about 7 px a
  // character of the 12 px font: a value never runs past the plot's edge.
  std::size_t longest_value = 0;
  for (const Bar& bar : bars) longest_value = std::max(longest_value, bar.value_text.size());
  const double label_width = 80, bar_width = 220, row = 26;
  const double width = label_width + bar_width + std::max(60.0, 7.5 * double(longest_value) + 12);
  std::ostringstream out;
  out << "<div><div class=\"plot-title\">" << html_escaped(title) << "</div>"
      << svg_open(width, double(bars.size()) * row + 4, title);
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double length = axis_max > 0 ? std::clamp(bars[i].value / axis_max, 0.0, 1.0) * bar_width : 0;
    const double y = double(i) * row + 4;
    out << "<text x=\"0\" y=\"" << y + 14 << "\">" << html_escaped(bars[i].label) << "</text>"
        << "<rect class=\"bar\" x=\"" << label_width << "\" y=\"" << y << "\" width=\"" << format("%.1f", length)
        << "\" height=\"18\" rx=\"3\" fill=\"" << bars[i].colour << "\"/>"
        << "<text class=\"dim\" x=\"" << format("%.1f", label_width + length + 6) << "\" y=\"" << y + 14 << "\">"
        << html_escaped(bars[i].value_text) << "</text>";
  }
  out << "</svg></div>";
  return out.str();
}

// Points against ratio: zero up to zero_credit_ratio, rising with log(ratio) to
// full_credit_ratio, then flat; the student's ratio and points marked on it.
std::string svg_points_curve(const PerformanceRubric& rubric, double ratio, double points) {
  const double left = 40, top = 12, plot_w = 340, plot_h = 110, width = left + plot_w + 20, height = top + plot_h + 34;
  const double x_max = std::max({1.25 * rubric.full_credit_ratio, 1.1 * ratio, 0.01});
  const double y_max = rubric.points > 0 ? rubric.points : 1;
  auto x = [&](double r) { return format("%.1f", left + std::min(r, x_max) / x_max * plot_w); };
  auto y = [&](double p) { return format("%.1f", top + plot_h - p / y_max * plot_h); };
  std::ostringstream out;
  out << "<div><div class=\"plot-title\">points curve: ratio = reference time / your time</div>"
      << svg_open(width, height, "points curve")
      << "<line x1=\"" << left << "\" y1=\"" << y(0) << "\" x2=\"" << left + plot_w << "\" y2=\"" << y(0)
      << "\" stroke=\"#d0d7de\"/><line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\""
      << y(0) << "\" stroke=\"#d0d7de\"/>"
      << "<text class=\"dim\" x=\"" << left - 6 << "\" y=\"" << y(y_max) << "\" text-anchor=\"end\" dy=\"4\">"
      << format("%.0f", y_max) << "</text><text class=\"dim\" x=\"" << left - 6 << "\" y=\"" << y(0)
      << "\" text-anchor=\"end\" dy=\"4\">0</text>";
  for (double threshold : {rubric.zero_credit_ratio, rubric.full_credit_ratio})
    out << "<line x1=\"" << x(threshold) << "\" y1=\"" << top << "\" x2=\"" << x(threshold) << "\" y2=\"" << y(0)
        << "\" stroke=\"#d0d7de\" stroke-dasharray=\"3 3\"/><text class=\"dim\" x=\"" << x(threshold) << "\" y=\""
        << top + plot_h + 16 << "\" text-anchor=\"middle\">" << format("%.2f", threshold) << "</text>";
  out << "<text class=\"dim\" x=\"" << left + plot_w << "\" y=\"" << top + plot_h + 30
      << "\" text-anchor=\"end\">ratio</text>"
      << "<polyline class=\"curve\" fill=\"none\" stroke=\"#8c959f\" stroke-width=\"2\" points=\"" << x(0) << ","
      << y(0);
  constexpr int steps = 24;  // the logarithmic rise drawn as short straight pieces
  for (int step = 0; step <= steps; ++step) {
    const double ratio_here = rubric.zero_credit_ratio *
                              std::pow(rubric.full_credit_ratio / rubric.zero_credit_ratio, double(step) / steps);
    out << " " << x(ratio_here) << "," << y(y_max * step / steps);
  }
  out << " " << x(x_max) << "," << y(y_max) << "\"/>";
  if (ratio > 0)
    out << "<circle class=\"you\" cx=\"" << x(ratio) << "\" cy=\"" << y(points) << "\" r=\"6\" fill=\"#0969da\" "
        << "stroke=\"#fff\" stroke-width=\"2\"/><text class=\"label\" x=\"" << x(ratio) << "\" y=\"" << y(points)
        << "\" dy=\"" << (points > 0.6 * y_max ? 20 : -10) << "\" text-anchor=\""
        << (ratio > 0.6 * x_max ? "end" : "start") << "\">you: ratio " << format("%.2f", ratio) << ", "
        << points_figure(points) << " points</text>";
  out << "</svg></div>";
  return out.str();
}

const PerformanceRubric* find_rubric(const std::vector<LabSpec>& labs, const LabResult& lab, const std::string& name) {
  for (const LabSpec& spec : labs)
    if (spec.id == lab.id)
      for (const PerformanceRubric& rubric : spec.performance)
        if (rubric.case_name == name) return &rubric;
  return nullptr;
}

void performance_case(std::ostringstream& out, const CaseResult& c, const CaseShare& share,
                      const PerformanceRubric* rubric) {
  out << "<div class=\"perf\"><div class=\"perf-head\"><strong>" << html_escaped(c.name) << "</strong><span>"
      << badge(c, share) << " " << share_text(share) << " points</span></div>";
  if (!c.message.empty()) out << "<p class=\"msg note\">" << html_escaped(c.message) << "</p>";
  const json& t = c.timing;
  if (t.is_object() && t.contains("student") && t.contains("reference")) {
    const json &student = t["student"], &reference = t["reference"];
    std::vector<Bar> times = {{"yours", student.value("median_ms", 0.0), "#0969da", ""},
                              {"reference", reference.value("median_ms", 0.0), "#8c959f", ""}};
    const auto library = library_time(c);
    if (library) times.push_back({"library", library->median_ms, "#8250df", ""});
    double slowest = 0;
    for (Bar& bar : times) bar.value_text = format("%.4f ms", bar.value), slowest = std::max(slowest, bar.value);
    const labkit::protocol::Throughput yours = labkit::protocol::throughput(t, student);
    const auto share_of_peak = [](const char* who, const labkit::protocol::Throughput& rate, const char* colour) {
      return Bar{who, rate.percent, colour,
                 format(rate.compute_bound ? "%.1f%% (%.1f TFLOP/s)" : "%.1f%% (%.0f GB/s)", rate.percent, rate.rate)};
    };
    const std::vector<Bar> peak_shares = {
        share_of_peak("yours", yours, "#0969da"),
        share_of_peak("reference", labkit::protocol::throughput(t, reference), "#8c959f")};
    out << "<div class=\"plots\"><div>" << svg_bars(times, slowest, "median time (ms, shorter is faster)");
    if (library) out << "<p class=\"note\">library: <code>" << html_escaped(library->name) << "</code></p>";
    out << svg_bars(peak_shares, 100,
                    yours.compute_bound ? "% of the " + yours.peak_name +
                                              format(" (%.1f TFLOP/s)", labkit::protocol::compute_peak(t).gflops / 1e3)
                                  : format("%% of measured read bandwidth (%.0f GB/s)", t.value("peak_read_gbps", 0.0)))
        << "</div>";
    if (rubric) out << svg_points_curve(*rubric, t.value("ratio", 0.0), c.points);
    out << "</div>";
  }
  out << "</div>";
}

// compute-sanitizer's first findings on the failing cases, each with the student's file and line.
void sanitizer_section(std::ostringstream& out, const LabResult& lab) {
  if (lab.sanitizer.empty()) return;
  out << "<h3>compute-sanitizer</h3><p class=\"note\">run again under the tools on: ";
  for (std::size_t i = 0; i < lab.sanitizer.front().cases.size(); ++i)
    out << (i ? ", " : "") << "<code>" << html_escaped(lab.sanitizer.front().cases[i]) << "</code>";
  out << "</p><ul class=\"sanitizer\">";
  for (const std::string& line : sanitizer_lines(lab)) out << "<li><code>" << html_escaped(line) << "</code></li>";
  out << "</ul>";
}

void lab_section(std::ostringstream& out, const LabResult& lab, const std::vector<LabSpec>& labs,
                 bool show_hidden_details) {
  const double share = lab.max_points > 0 && judged_here(lab) ? 100 * lab_points(lab) / lab.max_points : 0;
  out << "<section class=\"lab\"><div class=\"lab-head\"><h2>Lab " << html_escaped(lab.id) << " "
      << html_escaped(lab.name) << ": " << html_escaped(lab.title) << "</h2><span class=\"total\">"
      << html_escaped(points_line(lab)) << "</span></div>"
      << "<div class=\"meter\"><div style=\"width:" << format("%.1f", share) << "%\"></div></div>"
      << "<p>status: <span class=\"badge "
      << (lab.status == LabStatus::graded ? "pass" : !judged_here(lab) ? "none" : "fail") << "\">"
      << html_escaped(to_string(lab.status)) << "</span>";
  if (lab.device.is_object() && lab.device.contains("name"))
    out << " <span class=\"note\">on " << html_escaped(lab.device.value("name", std::string())) << "</span>";
  out << "</p>";
  if (!lab.note.empty()) out << "<p class=\"msg note\">" << html_escaped(lab.note) << "</p>";
  if (!lab.build_log.empty()) out << "<pre>" << html_escaped(lab.build_log) << "</pre>";
  if (lab.status == LabStatus::missing_files) {  // nothing was judged: the note says it all
    out << "</section>";
    return;
  }
  if (const std::string none = none_ran(lab); !none.empty()) {
    out << "<p class=\"note\">The lab's checks did not run: " << html_escaped(none) << ".</p></section>";
    return;
  }

  const std::vector<SharedHint> shared = shared_hints(lab, show_hidden_details);
  const std::vector<CaseShare> shares = case_shares(lab);
  out << "<h3>correctness</h3><div class=\"table-wrap\"><table><tr><th>case</th><th>verdict</th><th>points</th>"
      << "<th>hint</th></tr>";
  for (std::size_t i = 0; i < lab.cases.size(); ++i) {
    const CaseResult& c = lab.cases[i];
    if (c.kind != "correctness") continue;
    const std::string hint = in_shared_hint(shared, c.name) ? see_shared_hint
                                                            : visible_message(c, show_hidden_details);
    out << "<tr><td><code>" << html_escaped(c.name) << "</code>"
        << (c.hidden ? " <span class=\"note\">(hidden)</span>" : "")
        << "</td><td>" << badge(c, shares[i]) << "</td><td class=\"num\">" << share_text(shares[i])
        << "</td><td class=\"msg\">" << html_escaped(hint) << "</td></tr>";
  }
  out << "</table></div>";
  for (const SharedHint& s : shared)
    out << "<p class=\"msg shared-hint\">The same hint for cases " << html_escaped(case_list(s)) << ": "
        << html_escaped(s.hint) << "</p>";
  sanitizer_section(out, lab);
  out << "<h3>performance</h3>";
  for (std::size_t i = 0; i < lab.cases.size(); ++i)
    if (lab.cases[i].kind == "performance")
      performance_case(out, lab.cases[i], shares[i], find_rubric(labs, lab, lab.cases[i].name));
  out << "</section>";
}

const LabSpec* find_spec(const std::vector<LabSpec>& labs, const LabResult& lab) {
  for (const LabSpec& spec : labs)
    if (spec.id == lab.id) return &spec;
  return nullptr;
}

bool handed_in(const LabResult& lab, const std::vector<LabSpec>& labs) {
  const LabSpec* spec = find_spec(labs, lab);
  return !spec || !not_handed_in(lab, *spec);
}

// Labs not handed in, in one line: in a report of every lab a card each would bury the one
// that was.
void not_handed_in_line(std::ostringstream& out, const Report& report, const std::vector<LabSpec>& labs) {
  std::vector<std::string> ids;
  double max_points = 0;
  for (const LabResult& lab : report.labs)
    if (!handed_in(lab, labs)) ids.push_back(lab.id), max_points += lab.max_points;
  if (ids.empty()) return;
  out << "<p class=\"not-handed-in\">Not handed in: lab" << (ids.size() > 1 ? "s " : " ") << html_escaped(id_ranges(ids))
      << " (0 of " << points_figure(max_points) << " points).</p>\n";
}

}  // namespace

std::string to_html(const Report& report, const std::vector<LabSpec>& labs, bool show_hidden_details) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      << "<title>Grade report: " << html_escaped(report.who) << "</title><style>" << page_base_style << report_style << "</style></head>\n"
      << "<body><main><h1>Grade report: " << html_escaped(report.who) << "</h1><p class=\"sub\">"
      << html_escaped(report.mode) << " &middot; total <strong>" << html_escaped(points_line(total_of(report)))
      << "</strong></p>\n";
  not_handed_in_line(out, report, labs);
  for (const LabResult& lab : report.labs)
    if (handed_in(lab, labs)) lab_section(out, lab, labs, show_hidden_details);
  out << "</main></body></html>\n";
  return out.str();
}

void HtmlReportWriter::write_run(const RunOutput& run) {
  write_file((run.dir / run.report.who).string() + ".html", to_html(run.report, run.labs, true));
}

void HtmlReportWriter::write_batch(const BatchOutput& batch) {
  for (std::size_t i = 0; i < batch.reports.size(); ++i)
    write_file(batch.dir / "handout" / (batch.file_names[i] + ".html"), to_html(batch.reports[i], batch.labs, false));
}

}  // namespace grade
