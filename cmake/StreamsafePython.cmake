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
    add_subdirectory(python)
  else()
    message(STATUS "streamsafe: Python package not built (Python3 development files or pybind11 missing)")
  endif()
endif()
