// Writes arrays in NumPy's .npy format (version 1.0), so a case's input and expected output
// open with numpy.load for a student to look at.
#pragma once

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace labkit {

template <class T>
constexpr const char* npy_dtype() {
  if constexpr (std::is_same_v<T, float>) return "<f4";
  else if constexpr (std::is_same_v<T, double>) return "<f8";
  else if constexpr (std::is_same_v<T, std::uint8_t>) return "|u1";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "<i4";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "<u4";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "<i8";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "<u8";
  else static_assert(sizeof(T) == 0, "no .npy dtype for this element type");
}

// `shape` empty means one dimension of values.size().
template <class T>
void write_npy(const std::string& path, const std::vector<T>& values, std::vector<std::size_t> shape = {}) {
  if (shape.empty()) shape = {values.size()};
  std::string dims;
  for (std::size_t d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.erase(dims.size() - 2);  // (3,) for one dimension, (3, 4) for two
  std::string header = "{'descr': '" + std::string(npy_dtype<T>()) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + length (2) + header + newline: a multiple of 64 bytes.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  const std::uint16_t length = std::uint16_t(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(char(length & 0xFF)).put(char(length >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * sizeof(T)));
}

}  // namespace labkit
