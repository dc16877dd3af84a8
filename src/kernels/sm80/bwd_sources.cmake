# Sources of the portable (sm80) attention backward; included by the top-level CMakeLists.txt.
list(APPEND CUDADENT_SM80_BWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm80/bwd.cu)
# the varlen kernels: a second unit (compiles beside bwd.cu; the dense kernels' code unchanged)
list(APPEND CUDADENT_SM80_BWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm80/bwd_varlen.cu)
