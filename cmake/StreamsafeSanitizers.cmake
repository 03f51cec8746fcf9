# STREAMSAFE_SANITIZE applies to every C++ target of the build. CUDA device code is left alone:
# the sanitizers instrument host code only.
if(STREAMSAFE_SANITIZE)
  set(_ss_flags -fsanitize=${STREAMSAFE_SANITIZE} -fno-omit-frame-pointer)
  if(STREAMSAFE_SANITIZE MATCHES "undefined")
    list(APPEND _ss_flags -fno-sanitize-recover=undefined)
  endif()
  foreach(flag IN LISTS _ss_flags)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${flag}>)
  endforeach()
  add_link_options(-fsanitize=${STREAMSAFE_SANITIZE})
endif()
