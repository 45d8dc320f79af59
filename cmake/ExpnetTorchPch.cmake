# The LibTorch precompiled header (<torch/torch.h>, built once by expnet_core)
# saves minutes on files that use tensors, but a file that uses none compiles
# several times slower with it than without (docs/performance.md, "Build
# time"). So a source gets it only when it includes a LibTorch header itself
# (<torch/...>, <ATen/...> or <c10/...>); a file that reaches tensors only
# through a project header should include <torch/torch.h> too (it is free
# under the PCH). Decided at configure time: a stale decision costs speed,
# never correctness (the PCH is force-included, it never changes meaning).
function(expnet_torch_pch_where_used target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  get_target_property(binary_dir ${target} BINARY_DIR)
  # AUTOMOC's generated file holds no LibTorch either.
  set_source_files_properties("${binary_dir}/${target}_autogen/mocs_compilation.cpp" TARGET_DIRECTORY ${target}
                              PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  foreach(source ${sources})
    if(NOT source MATCHES "\\.(cpp|cc|cxx)$")
      continue()
    endif()
    if(IS_ABSOLUTE "${source}")
      set(path "${source}")
    else()
      set(path "${source_dir}/${source}")
    endif()
    if(NOT EXISTS "${path}")
      continue()  # generated (moc, rcc): no LibTorch
    endif()
    file(STRINGS "${path}" torch_includes REGEX "^#include <(torch|ATen|c10)/" LIMIT_COUNT 1)
    if(NOT torch_includes)
      set_source_files_properties("${path}" TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()

# Reuse expnet_core's LibTorch precompiled header in another target, for its
# sources that use tensors (same flags: PIC everywhere, same standard).
function(expnet_use_torch_pch target)
  target_precompile_headers(${target} REUSE_FROM expnet_core)
  expnet_torch_pch_where_used(${target})
endfunction()
