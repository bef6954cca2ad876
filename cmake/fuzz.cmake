# Fuzzing and thread-sanitizer builds. Included (OPTIONAL) at the end of the
# top-level CMakeLists.txt, after lib/, daemon/ and tests/ exist.
#
#   -DIVER_FUZZ=ON  (clang only; use with -DIVER_SANITIZE=ON)
#       libFuzzer targets tests/fuzz/fuzz-<name>.c, built with
#       -fsanitize=fuzzer,address,undefined against the library objects, which
#       get -fsanitize=fuzzer-no-link (coverage) on top. Each target is also a
#       ctest test fuzz/fuzz-<name> (label "fuzz") that runs it over its seed
#       corpus tests/fuzz/corpus/<name>/ only: a regression run, no fuzzing.
#       Long runs: scripts/fuzz-run.sh (outside CI).
#         CC=clang cmake -B build-fuzz -DIVER_FUZZ=ON -DIVER_SANITIZE=ON
#         cmake --build build-fuzz && ctest --test-dir build-fuzz -L fuzz
#   -DIVER_TSAN=ON
#       -fsanitize=thread everywhere (not together with IVER_SANITIZE).

option(IVER_FUZZ "Build libFuzzer targets (clang only)" OFF)
option(IVER_TSAN "Build with ThreadSanitizer" OFF)

if(IVER_TSAN)
  if(IVER_SANITIZE)
    message(FATAL_ERROR "IVER_TSAN and IVER_SANITIZE (ASan) cannot be combined")
  endif()
  # Directory-level options are taken when a target is created, and this file
  # runs after every target exists: put the flags on the targets themselves.
  set(_iver_tsan_targets iver_obj iver iverd iverctl)
  get_property(_iver_test_targets DIRECTORY ${PROJECT_SOURCE_DIR}/tests PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_iver_bench_targets DIRECTORY ${PROJECT_SOURCE_DIR}/bench PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t ${_iver_tsan_targets} ${_iver_test_targets} ${_iver_bench_targets})
    if(TARGET ${t})
      get_target_property(_type ${t} TYPE)
      if(_type MATCHES "EXECUTABLE|LIBRARY")
        target_compile_options(${t} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
        if(NOT _type STREQUAL "OBJECT_LIBRARY")
          target_link_options(${t} PRIVATE -fsanitize=thread)
        endif()
      endif()
    endif()
  endforeach()
endif()

if(NOT IVER_FUZZ)
  return()
endif()

if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "IVER_FUZZ needs clang (libFuzzer): configure with CC=clang")
endif()

# Coverage instrumentation for the code under test. Without IVER_SANITIZE the
# library gets ASan+UBSan here, and everything linking it the runtimes.
if(IVER_SANITIZE)
  target_compile_options(iver_obj PRIVATE -fsanitize=fuzzer-no-link)
else()
  target_compile_options(iver_obj PRIVATE -fsanitize=fuzzer-no-link,address,undefined
                         -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(iver_obj INTERFACE -fsanitize=address,undefined)
endif()

set(IVER_FUZZ_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz)
file(GLOB IVER_FUZZ_SOURCES CONFIGURE_DEPENDS ${IVER_FUZZ_DIR}/fuzz-*.c)
foreach(src ${IVER_FUZZ_SOURCES})
  get_filename_component(name ${src} NAME_WE)         # fuzz-policy
  string(REGEX REPLACE "^fuzz-" "" short ${name})     # policy
  add_executable(${name} ${src})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined
                         -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE iver_obj)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
  if(short STREQUAL "request")
    # the daemon's request decoder: one pure file, depends on json-c only
    target_sources(${name} PRIVATE ${PROJECT_SOURCE_DIR}/daemon/iverd/request.c)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/daemon/iverd)
    target_link_libraries(${name} PRIVATE PkgConfig::JSONC)
  endif()
  set(_dict)
  if(EXISTS ${IVER_FUZZ_DIR}/${short}.dict)
    set(_dict -dict=${IVER_FUZZ_DIR}/${short}.dict)
  endif()
  if(BUILD_TESTING)
    # Regression mode: every seed once (-runs=0 executes the corpus and
    # stops); nothing is written to the source tree.
    add_test(NAME fuzz/${name}
      COMMAND ${name} -runs=0 ${_dict} ${IVER_FUZZ_DIR}/corpus/${short})
    set_tests_properties(fuzz/${name} PROPERTIES LABELS fuzz TIMEOUT 300
      ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  endif()
endforeach()

# Seed generator for the binary corpora (measurement lists, snapshots):
#   build-fuzz/fuzz/gen-seeds tests/fuzz/corpus
add_executable(gen-seeds ${IVER_FUZZ_DIR}/gen-seeds.c)
target_link_libraries(gen-seeds PRIVATE iver_obj)
set_target_properties(gen-seeds PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
