// render-report-html: a saved JSON report (student.json's shape) to the HTML report, with the
// rubric thresholds from the labs' lab.yaml. Used by browser-test.sh to render a fixture.
//   render-report-html SOURCE_ROOT REPORT.json OUT.html
#include "catalog.h"
#include "model.h"
#include "report/html_report.h"

#include <fstream>
#include <iostream>
#include <stdexcept>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: render-report-html SOURCE_ROOT REPORT.json OUT.html\n";
    return 2;
  }
  try {
    const nlohmann::json saved = nlohmann::json::parse(std::ifstream(argv[2]));
    grade::Report report{saved.at("who"), saved.at("mode")};
    for (const nlohmann::json& lab : saved.at("labs")) report.labs.push_back(grade::lab_from_json(lab));
    grade::add_totals(report);
    std::ofstream out(argv[3]);
    out << grade::to_html(report, grade::load_catalog(argv[1]), true);
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[3]);
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "render-report-html: " << error.what() << "\n";
    return 1;
  }
}
