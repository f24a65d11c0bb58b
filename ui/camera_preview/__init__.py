"""The camera preview's face: the sidebar's Camera panel (panel.py) and the image in a
corner of the 3D viewport (draw.py). live/camera_preview.py renders and uploads it;
components/camera_preview_settings.py keeps what is previewed."""
