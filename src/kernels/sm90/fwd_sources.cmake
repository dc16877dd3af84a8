# Sources of the Hopper forward (compiled for sm_90a only; see CMakeLists.txt).
list(APPEND CUDADENT_SM90_FWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm90/fwd.cu)
list(APPEND CUDADENT_SM90_FWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm90/fwd_varlen.cu)
