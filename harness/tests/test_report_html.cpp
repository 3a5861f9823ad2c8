#include "catalog.h"
#include "model.h"
#include "report/html_report.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

namespace {

// The fixture browser-test.sh renders too: lab 01 graded (a hostile hint, a hidden failure,
// three timed cases, two with a library anchor) and lab 04 failed to build.
grade::Report fixture_report() {
  const auto saved = nlohmann::json::parse(std::ifstream(LABKIT_TEST_SOURCE_ROOT "/harness/tests/html/sample-report.json"));
  grade::Report report{saved.at("who"), saved.at("mode")};
  for (const auto& lab : saved.at("labs")) report.labs.push_back(grade::lab_from_json(lab));
  grade::add_totals(report);
  return report;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The value of attribute `name` in the tag that starts at `at`.
std::string attribute(const std::string& html, std::size_t at, const std::string& name) {
  const std::size_t start = html.find(" " + name + "=\"", at) + name.size() + 3;
  return html.substr(start, html.find('"', start) - start);
}

// An SVG polyline's "x,y x,y ..." as points.
std::vector<std::pair<double, double>> polyline(const std::string& points) {
  std::vector<std::pair<double, double>> line;
  std::istringstream in(points);
  for (std::string point; in >> point;) {
    const std::size_t comma = point.find(',');
    line.push_back({std::stod(point.substr(0, comma)), std::stod(point.substr(comma + 1))});
  }
  return line;
}

}  // namespace

TEST_SUITE("report") {
  TEST_CASE("html_escaped makes markup and quotes inert") {
    CHECK(grade::html_escaped(R"(<script>alert("x" & 'y')</script>)") ==
          "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;");
    CHECK(grade::html_escaped("plain text") == "plain text");
  }

  TEST_CASE("the HTML report is self-contained and escapes what a submission prints") {
    const auto report = fixture_report();
    const std::string html = grade::to_html(report, grade::load_catalog(LABKIT_TEST_SOURCE_ROOT), true);
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK_MESSAGE(html.find("<script") == std::string::npos, "a <script> in a hint must come out as text");
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("&lt;script&gt;document.body.innerHTML=&#39;PWNED&#39;&lt;/script&gt;") != std::string::npos);
    CHECK(html.find("&lt;stdin&gt;") != std::string::npos);  // the build log is escaped too
    for (const char* external : {"src=\"http", "href=\"http", "@import", "url("})
      CHECK_MESSAGE(html.find(external) == std::string::npos, "fetches nothing: " << external);
  }

  TEST_CASE("every case and lab title appears, with badges and totals") {
    const auto report = fixture_report();
    const std::string html = grade::to_html(report, grade::load_catalog(LABKIT_TEST_SOURCE_ROOT), true);
    for (const auto& lab : report.labs) {
      CHECK_MESSAGE(html.find(grade::html_escaped(lab.title)) != std::string::npos, lab.title);
      if (lab.status == grade::LabStatus::graded)
        for (const auto& c : lab.cases) CHECK_MESSAGE(html.find(">" + c.name + "<") != std::string::npos, c.name);
    }
    CHECK(html.find("69.31 / 200 points") != std::string::npos);
    CHECK(count(html, "badge pass\">pass") == 5);  // 4 correctness + the timed case with full points in lab 01
    // Timed, correct, and earning 7.6 of 15 and 1.2 of 15: not a green "pass".
    CHECK(count(html, "badge part\">partial") == 2);
    CHECK(count(html, "badge fail\">fail") == 2);
    // Lab 04 did not build: one line instead of a table of five cases "not run".
    CHECK(count(html, "badge none\">not run") == 0);
    CHECK(html.find("checks did not run: none of its 5 cases ran (100 points).") != std::string::npos);
  }

  TEST_CASE("each timed case gets its bars and its points curve") {
    const std::string html =
        grade::to_html(fixture_report(), grade::load_catalog(LABKIT_TEST_SOURCE_ROOT), true);
    // Per timed case: yours, reference (and CUB on two of them) for time; yours, reference for bandwidth.
    CHECK(count(html, "<rect class=\"bar\"") == 3 * 4 + 2);
    CHECK(count(html, ">library</text>") == 2);
    CHECK(count(html, "library: <code>CUB</code>") == 2);
    CHECK(count(html, "<polyline class=\"curve\"") == 3);
    CHECK(count(html, "<circle class=\"you\"") == 3);
    CHECK(html.find("you: ratio 0.42, 12.38 points") != std::string::npos);
    CHECK(html.find(">0.80</text>") != std::string::npos);  // lab 01's full_credit_ratio, from lab.yaml
    CHECK(html.find("% of measured read bandwidth (3010 GB/s)") != std::string::npos);
  }

  TEST_CASE("each student's dot sits on the drawn points curve") {
    const std::string html =
        grade::to_html(fixture_report(), grade::load_catalog(LABKIT_TEST_SOURCE_ROOT), true);
    std::size_t dots = 0;
    for (std::size_t at = html.find("<polyline class=\"curve\""); at != std::string::npos;
         at = html.find("<polyline class=\"curve\"", at + 1)) {
      const std::vector<std::pair<double, double>> line = polyline(attribute(html, at, "points"));
      const std::size_t dot = html.find("<circle class=\"you\"", at);
      REQUIRE(dot != std::string::npos);
      const double x = std::stod(attribute(html, dot, "cx")), y = std::stod(attribute(html, dot, "cy"));
      for (std::size_t i = 1; i < line.size(); ++i)
        if (line[i - 1].first <= x && x <= line[i].first && line[i].first > line[i - 1].first) {
          const double on_line = line[i - 1].second + (line[i].second - line[i - 1].second) * (x - line[i - 1].first) /
                                                          (line[i].first - line[i - 1].first);
          CHECK_MESSAGE(std::abs(on_line - y) < 2, "the dot at x " << x << " is at y " << y << ", the curve at " << on_line);
          ++dots;
          break;
        }
    }
    CHECK(dots == 3);
  }

  TEST_CASE("a bar's value stays inside its plot, whatever its length") {
    const std::string html =
        grade::to_html(fixture_report(), grade::load_catalog(LABKIT_TEST_SOURCE_ROOT), true);
    std::size_t values = 0;
    for (std::size_t at = html.find("<rect class=\"bar\""); at != std::string::npos;
         at = html.find("<rect class=\"bar\"", at + 1)) {
      const double width = std::stod(attribute(html, html.rfind("<svg ", at), "width"));
      const std::size_t text = html.find("<text class=\"dim\"", at);
      const std::size_t from = html.find('>', text) + 1;
      const std::string value = html.substr(from, html.find('<', from) - from);
      // 12 px text: 7.5 px a character in DejaVu Sans, the widest of the report's fonts.
      CHECK_MESSAGE(std::stod(attribute(html, text, "x")) + 7.5 * double(value.size()) <= width, value);
      ++values;
    }
    CHECK(values == 3 * 4 + 2);
  }

  TEST_CASE("the library's bar is drawn only where the runner's record has a library time") {
    grade::Report report = fixture_report();
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    // The fixture: CUB on two of lab 01's three timed cases (above). Take both away, or make
    // them something other than a time: two bars per plot, no third.
    for (grade::CaseResult& c : report.labs[0].cases)
      if (c.timing.is_object()) c.timing.erase("anchor");
    CHECK(count(grade::to_html(report, labs, true), "<rect class=\"bar\"") == 3 * 4);
    report.labs[0].cases[8].timing["anchor"] = {{"name", "CUB"}, {"median_ms", "n/a"}};
    CHECK(count(grade::to_html(report, labs, true), "<rect class=\"bar\"") == 3 * 4);
    report.labs[0].cases[8].timing["anchor"] = {{"name", "cuBLAS"}, {"median_ms", 0.25}};
    const std::string html = grade::to_html(report, labs, true);
    CHECK(count(html, "<rect class=\"bar\"") == 3 * 4 + 1);
    CHECK(html.find("library: <code>cuBLAS</code>") != std::string::npos);
    CHECK(html.find(">0.2500 ms</text>") != std::string::npos);
  }

  TEST_CASE("a lab not handed in is its note, without tables or plots") {
    grade::Report report = fixture_report();
    grade::LabResult& lab = report.labs[0];
    lab.status = grade::LabStatus::missing_files;
    lab.note = "histogram.cu is a symbolic link; hand in the file itself (lab not graded)";
    for (grade::CaseResult& c : lab.cases) c.outcome = grade::Outcome::not_run, c.timing = nullptr;
    const std::string html = grade::to_html(report, grade::load_catalog(LABKIT_TEST_SOURCE_ROOT), false);
    const std::string section = html.substr(0, html.find("Lab 04"));
    CHECK(section.find(grade::html_escaped(lab.note)) != std::string::npos);
    CHECK(section.find("<table>") == std::string::npos);
    CHECK(section.find("<h3>performance</h3>") == std::string::npos);
    CHECK(count(html, "<table>") == 0);  // lab 04 did not build: no table either
  }

  TEST_CASE("a hint shared by many failing cases appears once in the HTML report") {
    grade::Report report = fixture_report();
    std::size_t failing = 0;
    for (grade::CaseResult& c : report.labs[0].cases)
      if (c.kind == "correctness") c.outcome = grade::Outcome::failed, c.hidden = false, c.message = "<zero the bins>", ++failing;
    const std::string html = grade::to_html(report, grade::load_catalog(LABKIT_TEST_SOURCE_ROOT), false);
    CHECK(count(html, "&lt;zero the bins&gt;") == 1);
    CHECK(count(html, grade::see_shared_hint) == failing);
    CHECK(html.find("<p class=\"msg shared-hint\">The same hint for cases ") != std::string::npos);
  }

  TEST_CASE("a hidden case's hint is withheld from students but not instructors") {
    const auto report = fixture_report();
    const auto labs = grade::load_catalog(LABKIT_TEST_SOURCE_ROOT);
    CHECK(grade::to_html(report, labs, true).find("bin 0 expected 6710887") != std::string::npos);
    const std::string handed_back = grade::to_html(report, labs, false);
    CHECK(handed_back.find("bin 0 expected 6710887") == std::string::npos);
    CHECK(handed_back.find("hidden case: details are withheld") != std::string::npos);
  }
}
