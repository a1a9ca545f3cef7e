# src/kernels/x86/sources.cmake -- included by the top-level CMakeLists.txt on x86-64: appends this
# backend's sources to MPL_SRC. One folder per ISA level (docs/naming.md), each compiled with exactly
# its level's flags and never a wider set; every kernel or path that runs a folder's code requires the
# whole level (src/kernels/x86/x86_isa.h holds the same levels as MPL_ISA masks). tools/check_isa.sh
# disassembles the objects and fails on any instruction outside a folder's level. The plain-flag files
# beside the folders (descriptors, drivers) get no ISA flags: they run before any ISA is known to exist.
# common/*.inc holds bodies shared by two levels; it is included, never compiled on its own.
set(MPL_X86_FLAGS_avx2 -mavx2 -mfma -mf16c)
set(MPL_X86_FLAGS_avxvnni ${MPL_X86_FLAGS_avx2} -mavxvnni)
set(MPL_X86_FLAGS_avx512 ${MPL_X86_FLAGS_avx2} -mavx512f -mavx512bw -mavx512vl -mavx512dq)
set(MPL_X86_FLAGS_avx512vnni ${MPL_X86_FLAGS_avx512} -mavx512vnni)
set(MPL_X86_FLAGS_avx512bf16 ${MPL_X86_FLAGS_avx512} -mavx512bf16)
set(MPL_X86_FLAGS_amx ${MPL_X86_FLAGS_avx512} -mavx512vnni -mavx512bf16 -mamx-tile -mamx-bf16 -mamx-int8)

file(GLOB MPL_X86_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
list(APPEND MPL_SRC ${MPL_X86_SRC})
foreach(level avx2 avxvnni avx512 avx512vnni avx512bf16 amx)
  file(GLOB _src CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/${level}/*.c)
  set_source_files_properties(${_src} PROPERTIES COMPILE_OPTIONS "${MPL_X86_FLAGS_${level}}")
  list(APPEND MPL_SRC ${_src})
endforeach()
