# Sources of the portable (sm80) attention forward; included by the top-level CMakeLists.txt.
list(APPEND CUDADENT_SM80_FWD_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/kernels/sm80/fwd.cu)
