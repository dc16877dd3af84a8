# Sources of the Hopper backward (compiled for sm_90a only; see CMakeLists.txt).
list(APPEND CUDADENT_SM90_BWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm90/bwd.cu)
