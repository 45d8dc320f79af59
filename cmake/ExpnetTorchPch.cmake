# Reuse expnet_core's LibTorch precompiled header in another target whose
# sources include LibTorch headers (same flags: PIC everywhere, same standard).
function(expnet_use_torch_pch target)
  target_precompile_headers(${target} REUSE_FROM expnet_core)
endfunction()
