# src/kernels/x86/sources.cmake -- included by the top-level CMakeLists.txt on x86-64: appends this
# backend's sources to MPL_SRC, each ISA folder compiled with exactly its level's flags (docs/naming.md).
# x86 kernels: one ISA per directory, each compiled only with that ISA's flags.
file(GLOB MPL_X86_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
file(GLOB MPL_AVX2_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/avx2/*.c)
file(GLOB MPL_AVXVNNI_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/avxvnni/*.c)
file(GLOB MPL_AVX512_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/avx512/*.c)
file(GLOB MPL_AMX_SRC CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/amx/*.c)
set_source_files_properties(${MPL_AVX2_SRC} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
set_source_files_properties(${MPL_AVXVNNI_SRC} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni")
set_source_files_properties(${MPL_AVX512_SRC} PROPERTIES COMPILE_OPTIONS
  "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mavx512vnni;-mavx2;-mfma;-mf16c")
set_source_files_properties(${MPL_AMX_SRC} PROPERTIES COMPILE_OPTIONS
  "-mamx-tile;-mamx-bf16;-mamx-int8;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mavx512vnni;-mavx2;-mfma;-mf16c")
list(APPEND MPL_SRC ${MPL_X86_SRC} ${MPL_AVX2_SRC} ${MPL_AVXVNNI_SRC} ${MPL_AVX512_SRC} ${MPL_AMX_SRC})
