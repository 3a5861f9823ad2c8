#include "similarity.h"

#include <doctest/doctest.h>

TEST_SUITE("similarity") {
  TEST_CASE("sim_c++'s passages are read with both files' lines and the tokens they share") {
    const auto runs = grade::parse_sim_runs(
        "Total input: 3 files (3 new, 0 old), 3831 tokens\n\n"
        "s00000.cu: line 18-205                      |s00001.cu: line 20-207                [1663]\n\n"
        "s00002.cu: line 84-86                       |starter.cu: line 3-5                    [41]\n");
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].first == "s00000.cu");
    CHECK(runs[0].second == "s00001.cu");
    CHECK(runs[0].passage.first_from == 18);
    CHECK(runs[0].passage.first_to == 205);
    CHECK(runs[0].passage.second_from == 20);
    CHECK(runs[0].passage.second_to == 207);
    CHECK(runs[0].passage.tokens == 1663);
    CHECK(runs[1].second == "starter.cu");
  }

  TEST_CASE("sim_c++'s percentages are read one way each: how much of the first is in the second") {
    const auto shares = grade::parse_sim_percentages(
        "s00001.cu consists for 100 % of s00000.cu material\ns00000.cu consists for 7 % of s00002.cu material\n");
    REQUIRE(shares.size() == 2);
    CHECK(shares.at({"s00001.cu", "s00000.cu"}) == 100);
    CHECK(shares.at({"s00000.cu", "s00002.cu"}) == 7);
  }

  TEST_CASE("the CSV ranks pairs as they come, the larger share of each first") {
    grade::LabSpec lab;
    lab.id = "01";
    grade::LabSimilarity found{&lab, {{"alice", {}, {}, {}}, {"bob", {}, {}, {}}, {"carol, jr", {}, {}, {}}}, {}, {}};
    grade::SimilarPair pair;
    pair.first = 0;
    pair.second = 2;
    pair.first_percent = 40;
    pair.second_percent = 92;
    pair.tokens = 300;
    pair.passages = {{1, 20, 3, 22, 300}};
    found.pairs = {pair};
    CHECK(pair.shared_percent() == 92);
    CHECK(grade::similarity_csv(found) ==
          "rank,lab,first,second,first_shared_percent,second_shared_percent,shared_tokens,passages\n"
          "1,01,alice,\"carol, jr\",40,92,300,1\n");
  }
}
