# Sources of the Hopper backward (compiled for sm_90a only; see CMakeLists.txt): the narrow rows
# and the entry points (bwd.cu), the wide rows (bwd_wide.cu), varlen (bwd_varlen.cu), compiled in
# parallel.
list(APPEND CUDADENT_SM90_BWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm90/bwd.cu
     ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm90/bwd_wide.cu
     ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm90/bwd_varlen.cu)
