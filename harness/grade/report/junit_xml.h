// JUnit XML: junit.xml, for CI dashboards and test-report viewers.
#pragma once

#include "catalog.h"
#include "model.h"
#include "report/report_writer.h"

#include <string>
#include <vector>

namespace grade {

// A test suite per student and lab; a test case for the lab as a whole (fails when the lab
// was not graded: a build error, a refused file, with the compiler's messages as the
// failure's text) and one per case. A case that did not run is skipped, with the reason,
// never a failure.
std::string junit_xml(const std::vector<Report>& reports, const std::vector<LabSpec>& labs);

class JunitXmlWriter final : public ReportWriter {
 public:
  void write_batch(const BatchOutput& batch) override;
  std::vector<BatchFile> batch_files() const override { return {{"junit.xml", BatchFile::For::instructor}}; }
};

}  // namespace grade
