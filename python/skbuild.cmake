# Included by the top-level CMakeLists.txt when scikit-build-core drives the build (`pip install .`).
# The wheel takes only the "python" install component (pyproject.toml: install.components), so the
# C header, pkg-config and CMake package files of the plain install stay out of site-packages.
# The shared library lands inside the package folder as cudadent/libcudadent.so, where
# python/cudadent/_library.py looks first. It is installed under a plain name (no SONAME symlink
# chain: wheels hold no symlinks) and loaded by path, so its SONAME does not matter.
install(FILES $<TARGET_FILE:cudadent> DESTINATION cudadent RENAME libcudadent.so COMPONENT python)
