//! The benchmark positions shared by the engine examples (the same positions, so
//! their figures compare).

/// Opening and middle-game positions of varied character.
pub const POSITIONS: [&str; 6] = [
    "startpos",
    "startpos moves 7g7f 3c3d 2g2f 4c4d 2f2e 2b3c 3i4h 3a3b",
    "startpos moves 7g7f 8c8d 2g2f 8d8e 8h7g 3c3d 7i8h 4a3b 2f2e 2b7g+ 8h7g",
    "startpos moves 7g7f 3c3d 2g2f 4c4d 2f2e 2b3c 3i4h 3a3b 5i6h 5a4b 6h7h 4b3a 4i5h 6a5b 3g3f 7a6b 4g4f",
    "startpos moves 2g2f 8c8d 2f2e 8d8e 6i7h 4a3b 2e2d 2c2d 2h2d 8e8f 8g8f 8b8f 2d3d",
    "startpos moves 7g7f 3c3d 6g6f 8c8d 6f6e 8d8e 8h7g 7a6b 7i6h 5a4b 6h6g 4b3b 2h6h 3a4b 5i4h 6a5b 4h3h 4c4d 3h2h",
];
