# Sources of the portable (sm80) attention forward; included by the top-level CMakeLists.txt.
list(APPEND CUDADENT_SM80_FWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm80/fwd.cu)
# the varlen kernels: a second unit (compiles beside fwd.cu; the dense kernels' code unchanged)
list(APPEND CUDADENT_SM80_FWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm80/fwd_varlen.cu)
