// Numbers in the kit's READMEs that come from records or rubrics are rendered, never written by
// hand: each sits in a marked block,
//
//     <!-- labkit:tiers 01 -->
//     ...rendered text...
//     <!-- /labkit:tiers -->
//
// that `grade docs` fills in from the records, and a kit test fails while any block differs
// from what the records give. The blocks:
//   tiers NN    what lab NN's starter, chapter version and reference earn, case by case, with
//               each of its steps (versions.yaml) that has a record
//   tiers all   every lab's three totals, and its recorded steps' totals
//   bench NN    what lab NN's benchmark printed on the recorded GPU (docs/benchmarks/)
//   rubric NN   lab NN's timed cases with their points and credit ratios, from its lab.yaml
// The tiers are rendered from the policy records (policy.h) scored under today's rubrics, so a
// rubric change that moves a figure makes its block stale as well.
#pragma once

#include "catalog.h"
#include "policy.h"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace grade::docs {

// The command that brings every block up to date, as a stale block's message names it.
inline constexpr const char* refresh_command = "./grade docs";

// Each lab's saved benchmark output, NN-name.txt, relative to the kit's root, and the command
// that saves it on a GPU.
inline constexpr const char* benchmarks_folder = "docs/benchmarks";
inline constexpr const char* record_benchmarks_command = "grading/tools/record-benchmarks.sh";

// How the tables name each lab, its three versions and its steps (words, no numbers), relative
// to the kit's root; a lab or version it leaves out gets a plain name.
inline constexpr const char* version_names_file = policy::versions_file;

// A block's text, between its markers: "tiers 01", "tiers all", "bench 01", "rubric 01", or
// "rubric 13 mpi-" (only the timed cases whose names start so: one part's table; several
// prefixes are separated by commas). Throws BadInput naming the block when the kit renders no
// such block.
std::string render_block(const std::string& source_root, const std::vector<LabSpec>& catalog,
                         const std::string& block);

// A Markdown text with every block's content replaced by what `render` gives for its name.
struct Refreshed {
  std::string text;
  std::vector<std::string> blocks;  // every block's name, in the text's order
  std::vector<std::string> stale;   // those whose content changed
};
// Throws std::runtime_error (with the line) on a block opened and never closed, or closed by
// another kind's marker.
Refreshed refresh_text(const std::string& text, const std::function<std::string(const std::string&)>& render);

// One file that holds blocks, as it is and as the records render it.
struct FileBlocks {
  std::filesystem::path file;  // relative to the kit's root
  Refreshed refreshed;
};
// Every Markdown file of the kit that holds a block: README.md, the READMEs under labs/ and
// grading/, and docs/. Reads and renders; writes nothing.
std::vector<FileBlocks> render_all(const std::string& source_root, const std::vector<LabSpec>& catalog);

// `grade docs`: writes each file whose blocks are stale and says which; 0, or BadInput /
// std::runtime_error from the rendering.
int write_all(const std::string& source_root, const std::vector<LabSpec>& catalog);

}  // namespace grade::docs
