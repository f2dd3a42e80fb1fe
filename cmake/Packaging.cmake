# `cpack -G DEB` in the build folder makes one Debian package per use, each
# depending on what it uses:
#
#   devcopy_<v>_amd64.deb               the tools (devcopy, devcopy-tidy,
#       devcopy-clangd), the clang-tidy plugin, the rule pages and the docs.
#       Depends: what dpkg-shlibdeps reads from the binaries (LLVM and clang 19,
#       gRPC and Abseil for devcopy-clangd); no LibTorch: none of them links it.
#   libdevcopy-probe-dev_<v>_amd64.deb  the runtime probe: headers, static
#       library, CMake package (find_package(devcopy)). Depends: libtorch-dev,
#       which its users link it with.
#   python3-devcopy_<v>_amd64.deb       the Python package, built against
#       Debian's python3-torch. Depends: python3-torch and the libraries its
#       extension links.
#
# Each carries /usr/share/doc/<package>/copyright (Apache-2.0 with LLVM
# exception, LICENSE).
set(CPACK_PACKAGE_NAME devcopy)
set(CPACK_PACKAGE_VENDOR devcopy)
set(CPACK_PACKAGE_CONTACT "devcopy maintainers <maintainers@devcopy.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "finds wasted device copies in LibTorch code: clang-tidy checks and a runtime probe")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)

# The user documentation beside the rule pages, in the source tree's layout,
# so that every relative link of the installed pages resolves
# (tests/docs/check_links.py checks both trees).
file(GLOB DEVCOPY_DOC_PAGES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${DEVCOPY_DOC_PAGES} DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT devcopy_tools)
install(FILES ${PROJECT_SOURCE_DIR}/bench/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/bench
        COMPONENT devcopy_tools)
install(FILES ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT devcopy_tools)

# The Python package: the importable tree the build made (its Python files,
# generated ones included), the extension, and the metadata pip and pytest
# read (entry point pytest11).
set(DEVCOPY_PYTHON_DIR lib/python3/dist-packages)
if(TARGET devcopy_python)
  install(DIRECTORY ${PROJECT_BINARY_DIR}/python/devcopy DESTINATION ${DEVCOPY_PYTHON_DIR}
          COMPONENT devcopy_python FILES_MATCHING PATTERN "*.py" PATTERN __pycache__ EXCLUDE)
  install(TARGETS devcopy_python LIBRARY DESTINATION ${DEVCOPY_PYTHON_DIR}/devcopy
          COMPONENT devcopy_python)
  set(dist_info ${PROJECT_BINARY_DIR}/packaging/devcopy-${PROJECT_VERSION}.dist-info)
  file(WRITE ${dist_info}/METADATA "Metadata-Version: 2.1\nName: devcopy\n"
       "Version: ${PROJECT_VERSION}\nSummary: ${CPACK_PACKAGE_DESCRIPTION_SUMMARY}\n"
       "License: Apache-2.0 WITH LLVM-exception\nRequires-Dist: torch\n")
  file(WRITE ${dist_info}/entry_points.txt "[pytest11]\ndevcopy = devcopy.pytest_plugin\n")
  file(WRITE ${dist_info}/INSTALLER "dpkg\n")
  install(DIRECTORY ${dist_info} DESTINATION ${DEVCOPY_PYTHON_DIR} COMPONENT devcopy_python)
endif()

set(CPACK_COMPONENTS_ALL devcopy_tools)
if(TARGET devcopy_probe)
  list(APPEND CPACK_COMPONENTS_ALL devcopy_probe)
endif()
if(TARGET devcopy_python)
  list(APPEND CPACK_COMPONENTS_ALL devcopy_python)
endif()

set(devcopy_tools_package devcopy)
set(devcopy_probe_package libdevcopy-probe-dev)
set(devcopy_python_package python3-devcopy)
foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  string(TOUPPER ${component} C)
  set(package ${${component}_package})
  set(CPACK_DEBIAN_${C}_PACKAGE_NAME ${package})
  set(CPACK_DEBIAN_${C}_FILE_NAME DEB-DEFAULT)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/copyright.in
                 ${PROJECT_BINARY_DIR}/packaging/${package}/copyright @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/${package}/copyright
          DESTINATION share/doc/${package} COMPONENT ${component})
endforeach()

set(CPACK_DEBIAN_DEVCOPY_TOOLS_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DEVCOPY_TOOLS_PACKAGE_RECOMMENDS "clang-tidy-19")
set(CPACK_DEBIAN_DEVCOPY_TOOLS_PACKAGE_SUGGESTS "libdevcopy-probe-dev, python3-devcopy")
set(CPACK_COMPONENT_DEVCOPY_TOOLS_DESCRIPTION
    "devcopy's static analyzer: clang-tidy checks for wasted device copies\n\
devcopy (analyze a compile database: text, JSON, SARIF, baselines, results\n\
cache, shards), devcopy-tidy (clang-tidy 19 with the checks), devcopy-clangd\n\
(clangd 19 with the checks) and a plugin for clang-tidy-19 (--load).")

set(CPACK_DEBIAN_DEVCOPY_PROBE_PACKAGE_DEPENDS "libtorch-dev")
set(CPACK_DEBIAN_DEVCOPY_PROBE_PACKAGE_RECOMMENDS "libgtest-dev")
set(CPACK_DEBIAN_DEVCOPY_PROBE_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEVCOPY_PROBE_DESCRIPTION
    "devcopy's runtime probe for LibTorch (development files)\n\
libdevcopy_probe inspects live modules for duplicated storages, unreachable\n\
and cached device memory, and discarded copies; GoogleTest assertions.\n\
find_package(devcopy) gives devcopy::probe and devcopy::gtest.")

set(CPACK_DEBIAN_DEVCOPY_PYTHON_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DEVCOPY_PYTHON_PACKAGE_DEPENDS "python3-torch, python3 (>= 3.11~), python3 (<< 3.12)")
set(CPACK_DEBIAN_DEVCOPY_PYTHON_PACKAGE_SECTION python)
set(CPACK_COMPONENT_DEVCOPY_PYTHON_DESCRIPTION
    "devcopy's runtime probe for PyTorch (Python 3)\n\
devcopy.inspect(model), devcopy.observe(model) and a pytest plugin\n\
(pytest --devcopy=fail) that find duplicated storages, unreachable and cached\n\
device memory, and discarded copies.")
include(CPack)
