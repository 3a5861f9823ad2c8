#include "labkit/npy.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

TEST_SUITE("npy") {
  TEST_CASE("a .npy file has NumPy's magic, a 64-byte aligned header and the raw data") {
    const auto path = (std::filesystem::temp_directory_path() / "labkit-test.npy").string();
    labkit::write_npy(path, std::vector<std::int32_t>{1, -2, 3, 4, 5, 6}, {2, 3});
    std::ifstream in(path, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    REQUIRE(bytes.size() > 10);
    CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    const std::size_t header_length = std::uint8_t(bytes[8]) | (std::uint8_t(bytes[9]) << 8);
    CHECK((10 + header_length) % 64 == 0);
    const std::string header = bytes.substr(10, header_length);
    CHECK(header.find("'descr': '<i4'") != std::string::npos);
    CHECK(header.find("'shape': (2, 3)") != std::string::npos);
    CHECK(header.back() == '\n');
    CHECK(bytes.size() == 10 + header_length + 6 * sizeof(std::int32_t));
    std::int32_t second;
    std::memcpy(&second, bytes.data() + 10 + header_length + 4, 4);
    CHECK(second == -2);
  }

  TEST_CASE("one dimension is written as a one-element tuple") {
    const auto path = (std::filesystem::temp_directory_path() / "labkit-test-1d.npy").string();
    labkit::write_npy(path, std::vector<std::uint8_t>(5, 7));
    std::ifstream in(path, std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(bytes.find("'shape': (5, )") != std::string::npos);
    CHECK(bytes.find("'descr': '|u1'") != std::string::npos);
  }
}
