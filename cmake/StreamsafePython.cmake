# STREAMSAFE_PYTHON: the Python package needs Python3 (Interpreter, Development) and pybind11.
# AUTO builds it when both are found; ON fails without them. The system interpreter is the
# default because that is where the distribution's torch and pybind11 live; a pyenv or venv
# python on PATH usually has neither (pass -DPython3_EXECUTABLE=... to choose another).
if(NOT STREAMSAFE_PYTHON STREQUAL "OFF")
  if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python3_EXECUTABLE /usr/bin/python3)
  endif()
  if(STREAMSAFE_PYTHON STREQUAL "ON")
    set(_ss_py_required REQUIRED)
  endif()
  find_package(Python3 COMPONENTS Interpreter Development.Module ${_ss_py_required})
  if(Python3_FOUND)
    find_package(pybind11 CONFIG ${_ss_py_required})
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(STREAMSAFE_HAVE_PYTHON ON)
  else()
    message(STATUS "streamsafe: Python package not built (Python3 development files or pybind11 missing)")
  endif()
endif()

# STREAMSAFE_TORCH_NATIVE: the sanitizer's native tier (streamsafe._torch_ops), built against
# libtorch (Debian's libtorch-dev, or the torch of Python3_EXECUTABLE: its cmake prefix is asked
# for). AUTO builds it when libtorch is found; without it the Python tier stays.
set(STREAMSAFE_TORCH_NATIVE AUTO CACHE STRING "Build the sanitizer's native tier (AUTO, ON, OFF)")

# In a function so that what torch's config sets (CUDA detection on a CUDA build of torch) stays
# out of the project's scope; what the native tier needs is handed up.
function(streamsafe_find_torch)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(prefix AND EXISTS "${prefix}")
    list(APPEND CMAKE_PREFIX_PATH "${prefix}")
  endif()
  if(STREAMSAFE_TORCH_NATIVE STREQUAL "ON")
    find_package(Torch CONFIG REQUIRED)
  else()
    find_package(Torch CONFIG QUIET)
  endif()
  if(Torch_FOUND)
    set(STREAMSAFE_HAVE_TORCH_NATIVE ON PARENT_SCOPE)
    set(TORCH_LIBRARIES "${TORCH_LIBRARIES}" PARENT_SCOPE)
    set(TORCH_INCLUDE_DIRS "${TORCH_INCLUDE_DIRS}" PARENT_SCOPE)
    set(TORCH_INSTALL_PREFIX "${TORCH_INSTALL_PREFIX}" PARENT_SCOPE)
    message(STATUS "streamsafe: the sanitizer's native tier against torch ${Torch_VERSION} (${Torch_DIR})")
  else()
    message(STATUS "streamsafe: the sanitizer's native tier not built (libtorch not found)")
  endif()
endfunction()

if(STREAMSAFE_HAVE_PYTHON AND NOT STREAMSAFE_TORCH_NATIVE STREQUAL "OFF")
  streamsafe_find_torch()
endif()

if(STREAMSAFE_HAVE_PYTHON)
  add_subdirectory(python)
endif()
