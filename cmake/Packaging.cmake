# `cpack -G DEB` in the build folder makes devcopy_<version>_<arch>.deb: the
# tools (bin/), the clang-tidy plugin (lib/devcopy/), the rule pages
# (share/doc/devcopy/rules/) and the probe with its CMake package.
#
# The runtime dependencies are read from the binaries by dpkg-shlibdeps (LLVM
# and clang 19 shared libraries, gRPC and Abseil for devcopy-clangd), so they
# match what was linked; LibTorch's runtime is named explicitly since the probe
# is a static library its users link with LibTorch.
set(CPACK_PACKAGE_NAME devcopy)
set(CPACK_PACKAGE_VENDOR devcopy)
set(CPACK_PACKAGE_CONTACT "devcopy maintainers <maintainers@devcopy.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "finds wasted device copies in LibTorch code: clang-tidy checks and a runtime probe")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libtorch1.13")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "clang-tidy-19, libtorch-dev")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "devcopy-tidy, devcopy, devcopy-clangd and a plugin for clang-tidy-19 (checks devcopy-*),\n\
and libdevcopy_probe, a LibTorch library that inspects live modules for duplicated\n\
storages, unreachable and cached device memory, and discarded copies.")
include(CPack)
