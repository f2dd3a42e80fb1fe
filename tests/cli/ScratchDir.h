// A gtest fixture with a scratch folder of its own, removed afterwards, and
// the file helpers the command's file tests share.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

class ScratchDir : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/devcopy_cli_filesXXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    namespace stdfs = std::filesystem;
    stdfs::permissions(dir_, stdfs::perms::owner_all, stdfs::perm_options::add);
    stdfs::remove_all(dir_);
  }
  std::string path(const std::string &name) const { return dir_ + "/" + name; }
  void write(const std::string &name, const std::string &text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  std::string read(const std::string &name) const {
    std::ifstream in(path(name), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  /// Only the files the test made: no temporary file may be left behind.
  std::size_t entries() const {
    namespace stdfs = std::filesystem;
    return std::size_t(std::distance(stdfs::directory_iterator(dir_),
                                     stdfs::directory_iterator()));
  }
  std::string dir_;
};
